import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { describeRunEnding, type RunEndingKind } from '../../src/shared/journal/run-ending.js';
import { repoRoot } from '../support/server-entry.js';

// How a run ended, read from its records (issue 55, item 5): every golden journal, one per outcome
// this server writes, gets the ending an auditor would name, with the decision and the policies of
// a Cedar denial, and audit list's words for it. A new outcome without its expected ending fails here.

const GOLDEN = path.join(repoRoot, 'test', 'fixtures', 'journals-0.2');

const EXPECTED: Record<string, { kind: RunEndingKind; words: RegExp }> = {
  permitted: { kind: 'permitted', words: /^permitted$/ },
  'retried-then-permitted': { kind: 'permitted', words: /^permitted$/ },
  'denied-by-cedar': { kind: 'denied', words: /^denied by policies\/mcp-server\/respond\.cedar#1$/ },
  'tool-call': { kind: 'withheld_tool_call', words: /^withheld: a tool call$/ },
  truncated: { kind: 'withheld_finish', words: /^withheld: finish length$/ },
  'provider-failure': { kind: 'provider_failed', words: /^provider failure: HTTP 500 from POST / },
  'cancelled-during-call': { kind: 'cancelled', words: /^cancelled$/ },
  deadline: { kind: 'deadline', words: /^deadline passed \(Timeout\)$/ },
  'over-budget': { kind: 'over_budget', words: /^over the token budget \(MaxTokens\)$/ },
  refused: { kind: 'error', words: /^error: model refused the request/ },
  'empty-answer': { kind: 'error', words: /^error: model produced no tool calls and no text/ },
  'key-in-answer': { kind: 'error', words: /^error: the answer contains the configured provider key/ },
  'not-well-formed': { kind: 'error', words: /^error: the provider's answer is not well-formed Unicode text/ },
  'usage-exceeded': { kind: 'error', words: /^error: the provider reported more tokens than the call reserved/ },
};

const manifest = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'manifest.json'), 'utf8')) as Record<string, { outcome: string }>;
const key = fs.readFileSync(path.join(GOLDEN, 'public-key'), 'utf8').trim();

test('every golden outcome has its expected ending here', () => {
  assert.deepEqual(
    Object.values(manifest)
      .map((m) => m.outcome)
      .sort(),
    Object.keys(EXPECTED).sort(),
  );
});

for (const [name, { outcome }] of Object.entries(manifest)) {
  test(`a ${outcome} run reads as ${EXPECTED[outcome]?.kind ?? '(no expectation)'}`, () => {
    const runId = name
      .replace(/\.jsonl$/, '')
      .split('.')
      .at(-1)!;
    const { report } = inspectJournal(path.join(GOLDEN, name), runId, key);
    const expected = EXPECTED[outcome]!;
    assert.ok(report.ending, JSON.stringify(report));
    assert.equal(report.ending.kind, expected.kind);
    assert.match(describeRunEnding(report.ending), expected.words);
    if (expected.kind === 'denied') {
      assert.equal(report.ending.decision, 'deny');
      assert.equal(report.ending.denied_by, 'cedar');
      assert.deepEqual(report.ending.policies, ['policies/mcp-server/respond.cedar#1']);
    }
    if (expected.kind === 'permitted') assert.equal(report.ending.decision, 'allow');
    if (expected.kind.startsWith('withheld')) assert.equal(report.ending.denied_by, 'finish_rule');
  });
}

test('a journal that fails verification has no ending; one without its Terminated record is incomplete', () => {
  const [name] = Object.keys(manifest);
  const runId = name!
    .replace(/\.jsonl$/, '')
    .split('.')
    .at(-1)!;
  const lines = fs.readFileSync(path.join(GOLDEN, name!), 'utf8').split('\n');
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-ending-'));
  try {
    const cut = path.join(scratch, 'cut.jsonl');
    fs.writeFileSync(cut, lines.slice(0, 3).join('\n') + '\n');
    assert.equal(inspectJournal(cut, runId, key).report.ending?.kind, 'incomplete');
    const forged = path.join(scratch, 'forged.jsonl');
    fs.writeFileSync(forged, lines.join('\n').replace('"Started"', '"Startet"'));
    assert.equal(inspectJournal(forged, runId, key).report.ending, null);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { FINISH_REASONS } from '../../src/shared/provider/finish-reasons.js';
import type { RunEnd } from '../../src/shared/worker-protocol.js';
import { runEndLevel, runEndReason } from '../../src/supervisor/runs/run-end.js';
import { repoRoot } from '../support/server-entry.js';

// Every way a run can end has the reason word and the level docs/running.md's `run.ended` table
// gives it. The ends are listed by kind in a record, so a kind added to RunEnd without an entry
// here does not compile.

const ENDS: { [Kind in RunEnd['kind']]: Extract<RunEnd, { kind: Kind }>[] } = {
  completed: [{ kind: 'completed' }],
  policy_denied: [{ kind: 'policy_denied', policies: ['forbid-secret-content'] }],
  tool_call_withheld: [{ kind: 'tool_call_withheld' }],
  finish_withheld: FINISH_REASONS.filter((finish) => finish !== 'complete').map((finish) => ({ kind: 'finish_withheld' as const, finish })),
  empty_answer: [{ kind: 'empty_answer' }],
  provider_key_in_answer: [{ kind: 'provider_key_in_answer' }],
  provider_failed: [
    { kind: 'provider_failed', failure: 'http', status: 429 },
    { kind: 'provider_failed', failure: 'http', status: 500 },
    { kind: 'provider_failed', failure: 'network' },
    { kind: 'provider_failed', failure: 'malformed' },
    { kind: 'provider_failed', failure: 'oversize' },
    { kind: 'provider_failed', failure: 'provider' },
    { kind: 'provider_failed', failure: 'aborted' },
  ],
  usage_exceeded: [{ kind: 'usage_exceeded' }],
  cancelled: [{ kind: 'cancelled' }],
  deadline: [{ kind: 'deadline' }],
  request_too_large: [{ kind: 'request_too_large' }],
  response_too_large: [{ kind: 'response_too_large' }],
  key_file_changed: [{ kind: 'key_file_changed' }],
  journal_failed: [{ kind: 'journal_failed' }],
  internal_error: [{ kind: 'internal_error' }],
  worker_failed: [{ kind: 'worker_failed' }],
};

/** The rows of the `| reason | level | the run |` table: each row's reason words (`<status>` as a number pattern) and its levels. */
function documentedReasons(): { words: RegExp[]; levels: string[] }[] {
  const page = fs.readFileSync(path.join(repoRoot, 'docs', 'running.md'), 'utf8');
  const table = page.slice(page.indexOf('| reason | level | the run |'));
  const rows = table.split('\n').slice(2);
  const parsed: { words: RegExp[]; levels: string[] }[] = [];
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const [reasons, levels] = row
      .split('|')
      .slice(1, 3)
      .map((cell) => cell.trim());
    const words = [...reasons!.matchAll(/`([^`]+)`/g)].map(([, word]) => new RegExp(`^${word!.replace('<status>', '\\d{3}')}$`));
    parsed.push({ words, levels: levels!.split('/').map((level) => level.trim()) });
  }
  return parsed;
}

test("every run end has the reason word and the level docs/running.md's run.ended table gives it", () => {
  const rows = documentedReasons();
  assert.ok(rows.length > 5, 'docs/running.md has the run.ended reason table');
  for (const end of Object.values(ENDS).flat()) {
    const word = runEndReason(end);
    const row = rows.find((r) => r.words.some((pattern) => pattern.test(word)));
    assert.ok(row !== undefined, `docs/running.md lists the reason ${word}`);
    // Only a completed run released its answer.
    const ok = end.kind === 'completed';
    const levels = end.kind === 'cancelled' ? [runEndLevel(ok, end, 'client'), runEndLevel(ok, end, 'shutdown')] : [runEndLevel(ok, end, undefined)];
    for (const level of levels) assert.ok(row.levels.includes(level), `${word} is at level ${level}, as docs/running.md says (${row.levels.join(' / ')})`);
  }
});

test('the reason words are the ones the operator has always read', () => {
  assert.equal(runEndReason({ kind: 'provider_failed', failure: 'http', status: 503 }), 'provider_http_503');
  // A failure other than HTTP is named by its kind, even should it carry a status.
  assert.equal(runEndReason({ kind: 'provider_failed', failure: 'provider', status: 529 }), 'provider_provider');
  assert.equal(runEndReason({ kind: 'finish_withheld', finish: 'truncated' }), 'finish_truncated');
  assert.equal(runEndReason({ kind: 'policy_denied', policies: [] }), 'policy_denied');
  // A run that released its answer is at info, whatever its end says.
  assert.equal(runEndLevel(true, { kind: 'completed' }, undefined), 'info');
});

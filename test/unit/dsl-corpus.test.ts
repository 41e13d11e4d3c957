// Corpus tests: every file in test/fixtures/dsl has an expected report and an
// expected conversational selection result. Regenerate after an intended
// change with UPDATE_DSL_FIXTURES=1 and review the diff.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { definitionRefusalText, selectConversationalDefinition } from '../../src/shared/dsl/conversational-definition.js';
import { parseDslBytes } from '../../src/shared/dsl/parse-report.js';
import { repoRoot } from '../support/server-entry.js';

const dir = join(repoRoot, 'test', 'fixtures', 'dsl');
const sources = readdirSync(dir)
  .filter((f) => f.endsWith('.symbi') || f.endsWith('.dsl'))
  .sort();

function observe(name: string): unknown {
  const bytes = readFileSync(join(dir, name));
  const stem = name.replace(/\.(symbi|dsl)$/, '');
  const file = `agents/${name}`;
  const report = parseDslBytes(bytes, file);
  const selection = selectConversationalDefinition([{ stem, file, text: bytes.toString('utf8') }], stem);
  const conversational = selection.ok
    ? {
        ok: true,
        declaredName: selection.definition.declaredName,
        capabilities: selection.definition.capabilities,
        timeoutMs: selection.definition.timeoutMs,
        inlinePolicies: selection.definition.inlinePolicies,
        declarationText: selection.definition.declarationText,
      }
    : { ok: false, kind: selection.refusal.kind, message: definitionRefusalText(selection.refusal) };
  return { report, conversational };
}

test('the corpus holds at least 30 DSL files', () => {
  assert.ok(sources.length >= 30, `only ${sources.length} corpus files`);
});

for (const name of sources) {
  test(`corpus ${name} matches its expected report`, () => {
    const expectedPath = join(dir, name.replace(/\.(symbi|dsl)$/, '.expected.json'));
    const actual = observe(name);
    if (process.env['UPDATE_DSL_FIXTURES'] === '1') writeFileSync(expectedPath, JSON.stringify(actual, null, 2) + '\n');
    const expected = JSON.parse(readFileSync(expectedPath, 'utf8')) as unknown;
    assert.deepStrictEqual(JSON.parse(JSON.stringify(actual)), expected);
  });
}

test('every syntax error in the corpus has a position and a one-line message', () => {
  for (const name of sources) {
    const report = parseDslBytes(readFileSync(join(dir, name)), name);
    assert.equal(report.has_errors, name.startsWith('err_'), `${name}: has_errors`);
    for (const e of report.errors) {
      assert.ok(e.line >= 1 && e.column >= 1, `${name}: position`);
      assert.ok(!/[\r\n]/.test(e.message) && e.message.length > 10, `${name}: message ${e.message}`);
    }
  }
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TestEvent } from 'node:test/reporters';
import testSummaryReporter, { summaryLine } from '../../scripts/test-summary-reporter.js';

// `npm test` ends with one line that counts what passed, failed and was skipped
// (scripts/test-summary-reporter.ts), after the dot reporter's dots and failures.

/** The events of a run of two files, as the runner hands them to a reporter. */
async function* run(): AsyncGenerator<TestEvent, void> {
  const at = { nesting: 1, line: 1, column: 1 };
  const pass = (name: string, file: string, extra = {}): TestEvent => ({
    type: 'test:pass',
    data: { ...at, name, file, testNumber: 1, details: { duration_ms: 1 }, ...extra },
  });
  yield pass('adds', '/x/a.test.js');
  yield pass('is skipped', '/x/a.test.js', { skip: true });
  const error = Object.assign(new Error('the failure'), { cause: new Error('boom') });
  yield { type: 'test:fail', data: { ...at, name: 'fails', file: '/x/b.test.js', testNumber: 2, details: { duration_ms: 1, error } } };
  for (const [name, value] of [
    ['tests', 3],
    ['pass', 1],
    ['fail', 1],
    ['cancelled', 0],
    ['skipped', 1],
    ['todo', 0],
    ['duration_ms', 171_400.5],
  ] as const) {
    yield { type: 'test:diagnostic', data: { nesting: 0, message: `${name} ${value}` } };
  }
}

describe('the test summary reporter', () => {
  it("ends the dot reporter's output with one line counting the run", async () => {
    let output = '';
    for await (const chunk of testSummaryReporter(run())) output += chunk;
    const lines = output.trimEnd().split('\n');
    assert.equal(lines[0], '..X');
    assert.match(output, /Failed tests:[\s\S]*fails[\s\S]*boom/);
    assert.equal(lines.at(-1), 'tests 1 passed, 1 failed, 1 skipped (files 2, 171 s)');
  });

  it('names cancelled and todo tests only when there are some', () => {
    assert.equal(summaryLine({ pass: 5, fail: 0, skipped: 0, cancelled: 2, todo: 1 }, 3), 'tests 5 passed, 0 failed, 0 skipped, 2 cancelled, 1 todo (files 3)');
  });
});

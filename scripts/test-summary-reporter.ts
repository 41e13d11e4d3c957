// `npm test`'s reporter (package.json "test:files"): node:test's dot reporter, whose output is a dot
// a test and, at the end, each failure in full, followed by one line that counts the run:
//
//   tests 1234 passed, 0 failed, 3 skipped (files 95, 171 s)
//
// The counts are the runner's own totals (its closing `pass`, `fail`, ... diagnostics); a cancelled
// or todo test is counted only when there is one. It runs from .test-build/scripts/, as JavaScript.

import type { TestEvent } from 'node:test/reporters';
import { dot } from 'node:test/reporters';

/** The runner's closing totals this line reports, by the diagnostic's name. */
const TOTALS = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo', 'duration_ms'] as const;
type Total = (typeof TOTALS)[number];

/** The closing line, from the runner's totals and the test files seen. */
export function summaryLine(totals: Partial<Record<Total, number>>, files: number): string {
  const count = (name: Total): number => totals[name] ?? 0;
  const optional = (['cancelled', 'todo'] as const).filter((name) => count(name) > 0).map((name) => `, ${count(name)} ${name}`);
  const seconds = totals.duration_ms === undefined ? '' : `, ${Math.round(totals.duration_ms / 1000)} s`;
  return `tests ${count('pass')} passed, ${count('fail')} failed, ${count('skipped')} skipped${optional.join('')} (files ${files}${seconds})`;
}

export default async function* testSummaryReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string, void> {
  const totals: Partial<Record<Total, number>> = {};
  const files = new Set<string>();
  async function* observed(): AsyncGenerator<TestEvent, void> {
    for await (const event of source) {
      if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.file !== undefined) files.add(event.data.file);
      if (event.type === 'test:diagnostic' && event.data.nesting === 0) {
        // The run's totals come last, at the top level, as `name value`; a file's own come first and are overwritten.
        const [name, value] = event.data.message.split(' ');
        if ((TOTALS as readonly string[]).includes(name!) && value !== undefined && Number.isFinite(Number(value))) totals[name as Total] = Number(value);
      }
      yield event;
    }
  }
  yield* dot(observed());
  yield `${summaryLine(totals, files.size)}\n`;
}

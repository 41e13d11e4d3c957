import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FUNCTION_MAX_LINES, formatLongFunction, longFunctions, longFunctionsInFile } from '../../scripts/function-lengths.js';
import { repoRoot } from '../support/server-entry.js';

// No function in src/ outside src/demo/ is longer than FUNCTION_MAX_LINES (issue 58): a run reads as
// its states, a command as its steps. src/demo/ is a script for a reader to follow top to bottom.

/**
 * Functions allowed over the limit for now, each by file and name, until the work on its folder
 * splits it (issue 58). Shrink this list; never add to it. An entry whose function is short again
 * fails the test too, so the list cannot outlive its reason.
 */
const ALLOWED_FOR_NOW = new Set<string>([
  // The run service's closure: its folder (src/supervisor/runs/) is being reworked separately.
  'src/supervisor/runs/run-service.ts createRunService',
]);

const key = (f: { file: string; name: string }): string => `${f.file} ${f.name}`;

describe('function lengths', () => {
  it(`no function in src/ outside src/demo/ is over ${FUNCTION_MAX_LINES} lines`, () => {
    const found = longFunctions(repoRoot, ['src'], FUNCTION_MAX_LINES).filter((f) => !f.file.startsWith('src/demo/'));
    const over = found.filter((f) => !ALLOWED_FOR_NOW.has(key(f)));
    assert.deepEqual(over.map(formatLongFunction), [], `split these functions below ${FUNCTION_MAX_LINES + 1} lines`);
    const stale = [...ALLOWED_FOR_NOW].filter((entry) => !found.some((f) => key(f) === entry));
    assert.deepEqual(stale, [], 'these functions are short now: take them off ALLOWED_FOR_NOW');
  });

  it('counts declarations, arrows and methods from their first line to their last', () => {
    const body = (n: number): string => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const source = [
      '/** A comment above is not counted. */',
      `function declared(): void {\n${body(5)}\n}`,
      `const arrow = (): void => {\n${body(6)}\n};`,
      `class Holder {\n  method(): void {\n${body(4)}\n  }\n}`,
      `function short(): void {\n${body(3)}\n}`,
    ].join('\n');
    const found = longFunctionsInFile('x.ts', source, 3).map((f) => `${f.name}@${f.line}:${f.lines}`);
    assert.deepEqual(found, ['declared@2:5', 'arrow@7:6', 'Holder.method@14:4']);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FUNCTION_MAX_LINES, formatLongFunction, longFunctions, longFunctionsInFile } from '../../scripts/function-lengths.js';
import { repoRoot } from '../support/server-entry.js';

// No function in src/ outside src/demo/ is longer than FUNCTION_MAX_LINES (issue 58): a run reads as
// its states, a command as its steps. src/demo/ is a script for a reader to follow top to bottom.

describe('function lengths', () => {
  it(`no function in src/ outside src/demo/ is over ${FUNCTION_MAX_LINES} lines`, () => {
    const found = longFunctions(repoRoot, ['src'], FUNCTION_MAX_LINES).filter((f) => !f.file.startsWith('src/demo/'));
    assert.deepEqual(found.map(formatLongFunction), [], `split these functions below ${FUNCTION_MAX_LINES + 1} lines`);
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

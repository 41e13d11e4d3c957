import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { symbiBin } from '../support/server-entry.js';

// An MCP client configured as `symbi --project X` (the sub-command left out) gets one line that
// says which command was meant, not only "unknown option" (issue 34, item 6); the demo explains a
// machine it cannot run on instead of a stack trace (item 5).

describe('the symbi command line', () => {
  for (const args of [['--project', '/tmp/x'], ['--log-format=json']]) {
    it(`names the mcp sub-command for ${args.join(' ')}`, () => {
      const run = spawnSync(process.execPath, [symbiBin, ...args], { encoding: 'utf8' });
      assert.equal(run.status, 2);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, new RegExp(`^symbi: ${args[0]!.split('=')[0]} is an option of the mcp sub-command; run: symbi mcp ${args.join(' ')}\\n$`));
    });
  }

  it('symbi mcp --summary-interval with a bad value: one line saying what is allowed, exit 2', () => {
    const run = spawnSync(process.execPath, [symbiBin, 'mcp', '--summary-interval', 'soon'], { encoding: 'utf8' });
    assert.equal(run.status, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^symbi mcp: --summary-interval "soon" is not valid; use a whole number of minutes from 0 \(none\) to 10080\n$/);
  });

  it('symbi demo with a temporary folder that does not exist: one line naming it and the fix, exit 1', () => {
    const missing = '/nonexistent-symbi-log-test-tmp';
    const run = spawnSync(process.execPath, [symbiBin, 'demo'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: missing } });
    assert.equal(run.status, 1);
    assert.match(
      run.stderr,
      new RegExp(`^symbi demo: cannot make a copy of the example in the temporary folder ${missing} \\(ENOENT\\); set TMPDIR to a folder you can write to\n$`),
      run.stderr,
    );
  });
});

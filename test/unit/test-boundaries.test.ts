import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../support/server-entry.js';

// test/'s folders say what a test file crosses (docs/development.md, "Which boundary a test uses"):
// - unit/: logic in the test process, no MCP session and no child process of its own;
// - session/: an MCP session served in the test process (test/support/in-process-server.ts or the
//   SDK's in-memory transport), no child process;
// - process/: a real `symbi` process (or another program) is the point: stdio framing, signals,
//   exit codes, other users, the command line;
// - e2e/: the fresh clone, the packed package and the real clients (`npm run test:e2e`, .ci/run).
// A file whose body does not match its folder fails here, so the folders stay true as tests move.

/** What starts a process in a test file: a child process, or the support helpers that spawn one. */
const STARTS_A_PROCESS =
  /node:child_process|\b(startServer|invokeOnce|spawnRawServer|spawnInitializedServer|spawnRawStdio|inspectWithCli|runInspector|startGenerationServer|symbiBin)\b/;
/** What serves a session in the test process. */
const SERVES_IN_PROCESS = /\b(startInProcessServer|startInProcessSession|InMemoryTransport)\b/;

function testFiles(folder: string): string[] {
  const dir = path.join(repoRoot, 'test', folder);
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => path.join('test', folder, name));
}

const read = (file: string): string => fs.readFileSync(path.join(repoRoot, file), 'utf8');

describe("test/'s folders say what each file crosses", () => {
  it('test/ holds no test file outside the boundary folders', () => {
    const loose = fs.readdirSync(path.join(repoRoot, 'test')).filter((name) => /\.test\.[cm]?[jt]s$/.test(name));
    assert.deepEqual(loose, [], 'move each into test/unit, test/session, test/process or test/e2e');
  });

  it('a unit test starts no process and serves no session', () => {
    for (const file of testFiles('unit')) {
      if (file.endsWith('test-boundaries.test.ts')) continue;
      const text = read(file);
      assert.doesNotMatch(text, STARTS_A_PROCESS, `${file} starts a process: it belongs in test/process`);
      assert.doesNotMatch(text, SERVES_IN_PROCESS, `${file} serves a session: it belongs in test/session`);
    }
  });

  it('a session test serves its session in process and starts no process', () => {
    const files = testFiles('session');
    assert.ok(files.length > 0);
    for (const file of files) {
      const text = read(file);
      assert.match(text, SERVES_IN_PROCESS, `${file} serves no session: it belongs in test/unit`);
      assert.doesNotMatch(text, STARTS_A_PROCESS, `${file} starts a process: it belongs in test/process`);
    }
  });

  it('a process test starts a process', () => {
    const files = testFiles('process');
    assert.ok(files.length > 0);
    for (const file of files) assert.match(read(file), STARTS_A_PROCESS, `${file} starts no process: it belongs in test/unit or test/session`);
  });
});

// `symbi dsl -f FILE` through the real CLI (the suite builds dist/ first). The command reads the file
// (readDslFile) and prints parseDslBytes's report: each file's refusal and each report is checked by
// calling those functions in this process; the command runs for its exit statuses (0 clean, 1 with
// errors, 2 for a usage error), the report as printed, commander's options and a FIFO it must not
// wait on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DSL_FILE_MAX_BYTES } from '../../src/shared/limits.js';
import { builtModule, symbiBin } from '../support/server-entry.js';

const { readDslFile } = (await import(builtModule('supervisor/commands/dsl-command.js'))) as typeof import('../../src/supervisor/commands/dsl-command.js');
const { parseDslBytes } = (await import(builtModule('shared/dsl/parse-report.js'))) as typeof import('../../src/shared/dsl/parse-report.js');

const work = mkdtempSync(join(tmpdir(), 'symbi-dsl-cli-'));
after(() => rmSync(work, { recursive: true, force: true }));

function symbi(...args: string[]) {
  const r = spawnSync(process.execPath, [symbiBin, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The report `symbi dsl -f FILE` prints for `file`, and its exit status (1 with errors), from the functions it calls. */
function reportOf(file: string) {
  const report = parseDslBytes(readDslFile(file), file);
  return { code: report.has_errors ? 1 : 0, report };
}

test('a clean file prints the report with 2-space indentation and exits 0', () => {
  const file = join(work, 'ok.symbi');
  writeFileSync(file, 'metadata { version = "1" }\nagent ok {\n  capabilities = ["read"]\n}\n');
  const r = symbi('dsl', '-f', file);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.source, file);
  assert.equal(report.has_errors, false);
  assert.deepEqual(report.metadata, { version: '1' });
  assert.equal(report.agents[0].name, 'ok');
  assert.equal(r.stdout, JSON.stringify(report, null, 2) + '\n');
  assert.equal(r.stderr, '');
});

test('syntax errors print the report and exit 1', () => {
  const file = join(work, 'bad.symbi');
  writeFileSync(file, 'agent x {\n  capabilities = ["read"]\n');
  const { code, report } = reportOf(file);
  assert.equal(code, 1);
  assert.equal(report.has_errors, true);
  assert.deepEqual(report.errors[0], { line: 3, column: 1, message: 'expected `}` to close agent `x` opened at 1:1, found end of file' });
});

test('invalid UTF-8 is a report with one error, exit 1', () => {
  const file = join(work, 'latin1.symbi');
  writeFileSync(file, Buffer.from([0x61, 0x67, 0x65, 0x6e, 0x74, 0x20, 0xe9]));
  // As a process: the exit status of a report with errors, and the long spelling of -f.
  const r = symbi('dsl', '--file', file);
  assert.equal(r.code, 1);
  assert.deepEqual(JSON.parse(r.stdout).errors, [{ line: 1, column: 1, message: 'the file is not valid UTF-8; DSL files must be UTF-8 text' }]);
});

// What the command line refuses before any file is read, and a FIFO (the read must not wait for a
// writer; the process's timeout would end a wait): each a process.
const usage: [string, () => string[], RegExp][] = [
  ['missing -f', () => ['dsl'], /missing -f FILE/],
  ['-f without a value', () => ['dsl', '-f'], /argument missing/],
  ['an unknown option', () => ['dsl', '--bogus'], /unknown option/],
  [
    'a FIFO (no hang)',
    () => {
      const fifo = join(work, 'pipe.symbi');
      const r = spawnSync('mkfifo', [fifo]);
      if (r.status !== 0) throw new Error('mkfifo unavailable');
      return ['dsl', '-f', fifo];
    },
    /is not a regular file/,
  ],
];

for (const [what, args, pattern] of usage) {
  test(`usage error: ${what} exits 2 with one line on stderr`, () => {
    const r = symbi(...args());
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
  });
}

// The files readDslFile refuses, each with the one-line message the command prints before it exits 2
// (as the FIFO's run above shows), and nothing parsed.
const refusedFiles: [string, () => string, RegExp][] = [
  ['a missing file', () => join(work, 'nope.symbi'), /cannot open .*nope\.symbi.* \(ENOENT\)/],
  ['a directory', () => work, /is not a regular file/],
  [
    'a file over 1 MiB',
    () => {
      const file = join(work, 'big.symbi');
      writeFileSync(file, '#'.repeat(DSL_FILE_MAX_BYTES + 1));
      return file;
    },
    /is 1048577 bytes; the limit is 1048576 bytes/,
  ],
  [
    'a symlink to a directory',
    () => {
      mkdirSync(join(work, 'd'), { recursive: true });
      symlinkSync(join(work, 'd'), join(work, 'link.symbi'));
      return join(work, 'link.symbi');
    },
    /is not a regular file/,
  ],
];

for (const [what, file, pattern] of refusedFiles) {
  test(`refused file: ${what}, in the one line the command prints before it exits 2`, () => {
    assert.throws(
      () => readDslFile(file()),
      (error: Error) => {
        assert.match(error.message, /^symbi dsl: /);
        assert.match(error.message, pattern);
        assert.doesNotMatch(error.message, /[\r\n]/, 'one line');
        return true;
      },
    );
  });
}

test('exactly 1 MiB is accepted', () => {
  const file = join(work, 'exact.symbi');
  writeFileSync(file, '#'.repeat(DSL_FILE_MAX_BYTES));
  const { code } = reportOf(file);
  assert.equal(code, 0);
});

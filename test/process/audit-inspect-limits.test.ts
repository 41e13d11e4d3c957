import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { craftJournal, runEvents, seedKey } from '../support/crafted-journal.js';
import { symbiBin } from '../support/server-entry.js';

// Long verification is bounded and announced: `--max-bytes` refuses a larger
// journal before reading it, `--time-limit` stops (and fails) a verification
// that runs longer, and `--cross-check` says how long it will take at the
// rate it measured before it starts. Each option runs through the command once
// (the value as the command line passes it); the other value of each is given
// to the verifier the command calls (inspectJournal), in this process.

const RUN = '7f3e2a10-4b5c-4d6e-8f90-a1b2c3d4e5f6';
const { sign, publicKeyHex: KEY } = seedKey(crypto.randomBytes(32));

function journalFile(t: { after(fn: () => void): void }): { file: string; bytes: number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-inspect-limits-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, `${RUN}.jsonl`);
  const bytes = craftJournal(RUN, runEvents(), sign);
  fs.writeFileSync(file, bytes);
  return { file, bytes: bytes.length };
}

function inspect(file: string, extra: string[]) {
  const r = spawnSync(process.execPath, [symbiBin, 'audit', 'inspect', file, '--run-id', RUN, '--public-key', KEY, ...extra], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.signal, null);
  return r;
}

/** The verifier the command runs, on the same journal, in this process: exit status and report. */
function inspectInProcess(file: string, options: { maxBytes?: number; timeLimitMs?: number }) {
  const { exitCode, report } = inspectJournal(file, RUN, KEY, options);
  return { status: exitCode, report };
}

test('--max-bytes refuses a larger journal before reading it, and accepts one within it', (t) => {
  const { file, bytes } = journalFile(t);
  const refused = inspect(file, ['--max-bytes', String(bytes - 1)]);
  assert.equal(refused.status, 1);
  assert.equal(JSON.parse(refused.stdout).error.message, `the journal is ${bytes} bytes; the limit is ${bytes - 1} bytes`);
  assert.equal(inspectInProcess(file, { maxBytes: bytes }).status, 0);
  const bad = inspect(file, ['--max-bytes', 'lots']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^error: --max-bytes must be a whole number of bytes/);
});

test('--time-limit stops a verification that runs longer and fails it with the reason', (t) => {
  const { file } = journalFile(t);
  const stopped = inspect(file, ['--time-limit', '0']);
  assert.equal(stopped.status, 1);
  const report = JSON.parse(stopped.stdout);
  assert.equal(report.verdict, 'failed');
  assert.match(report.error.message, /^stopped at line 1: the time limit of 0 s passed after 0 verified records/);
  // --time-limit 600 is given to the verifier in milliseconds.
  assert.equal(inspectInProcess(file, { timeLimitMs: 600_000 }).status, 0);
});

test('--cross-check states the records and its measured rate before it starts', (t) => {
  const { file } = journalFile(t);
  const r = inspect(file, ['--cross-check']);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[0]!, /^cross-check: 6 signatures to verify again with tweetnacl at the measured [0-9.]+ ms each: about [0-9.]+ s/);
  assert.match(lines[1]!, /^journal verifies and is complete \(6 records\)/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter } from '../../src/shared/journal/journal-writer.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { listRuns } from '../../src/shared/journal/journal-listing.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { symbiBin } from '../support/server-entry.js';

// `symbi audit inspect` refusals of the file itself and of its arguments, and
// `symbi audit list`, through the real command line. The verdict on each file
// comes from the verifier the command runs (inspectJournal), and the JSON
// listing from listRuns, in this process; the command runs where it alone
// decides (its arguments, the usage line, the table) and for one file refusal.

const bin = symbiBin;
const KEY = '22'.repeat(32);
const RUN = '0b7c4a4e-62a1-4d4c-9f3e-1f2a3b4c5d6e';

function symbi(args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.signal, null, `symbi ${args.join(' ')} finished by itself`);
  return r;
}

function tempDir(t: { after(fn: () => void): void }, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `symbi audit inspect FILE --run-id RUN --public-key KEY`: exit status and JSON report, from a process or from the verifier in this process. */
function inspect(file: string, asProcess: boolean): { status: number | null; stdout: string; stderr: string } {
  if (asProcess) return symbi(['audit', 'inspect', file, '--run-id', RUN, '--public-key', KEY]);
  const { exitCode, report } = inspectJournal(path.resolve(file), RUN, KEY);
  return { status: exitCode, stdout: JSON.stringify(report), stderr: '' };
}

function expectFileRefusal(file: string, pattern: RegExp, asProcess = false) {
  const r = inspect(file, asProcess);
  assert.equal(r.status, 1, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.verdict, 'failed');
  assert.equal(report.error.line, null);
  assert.match(report.error.message, pattern);
}

test('inspect refuses a FIFO promptly, a symlink, a directory, a missing file and a file over 64 MiB', (t) => {
  const dir = tempDir(t, 'audit-cli-');
  const fifo = path.join(dir, 'journal.fifo');
  execFileSync('mkfifo', [fifo]);
  // As a process, whose timeout would end a read that waited for a writer.
  expectFileRefusal(fifo, /not a regular file/, true);

  const real = path.join(dir, 'real.jsonl');
  fs.writeFileSync(real, '');
  fs.symlinkSync(real, path.join(dir, 'link.jsonl'));
  expectFileRefusal(path.join(dir, 'link.jsonl'), /symlink/);

  expectFileRefusal(dir, /not a regular file/);
  expectFileRefusal(path.join(dir, 'absent.jsonl'), /does not exist/);

  const huge = path.join(dir, 'huge.jsonl');
  const fd = fs.openSync(huge, 'w');
  fs.ftruncateSync(fd, 64 * 1024 * 1024 + 1); // sparse: no disk space used
  fs.closeSync(fd);
  expectFileRefusal(huge, /is 67108865 bytes; the limit is 67108864 bytes/);
});

test('inspect: missing or malformed arguments print a usage line and exit 1', (t) => {
  const dir = tempDir(t, 'audit-cli-');
  const file = path.join(dir, 'j.jsonl');
  fs.writeFileSync(file, '');
  const cases: Array<[string[], RegExp]> = [
    [['audit', 'inspect'], /missing JOURNAL/],
    [['audit', 'inspect', file, '--public-key', KEY], /missing --run-id/],
    [['audit', 'inspect', file, '--run-id', RUN], /missing --public-key/],
    [['audit', 'inspect', file, '--run-id', 'not-a-uuid', '--public-key', KEY], /--run-id must be a UUID/],
    [['audit', 'inspect', file, '--run-id', RUN, '--public-key', 'abc'], /--public-key must be 64 hexadecimal characters/],
    [['audit', 'inspect', file, '--run-id', RUN, '--public-key', KEY, '--bogus'], /unknown option/],
  ];
  for (const [args, pattern] of cases) {
    const r = symbi(args);
    assert.equal(r.status, 1, args.join(' '));
    assert.equal(r.stdout, '', 'nothing on stdout');
    assert.match(r.stderr, pattern);
    assert.match(r.stderr, /usage: symbi audit inspect JOURNAL --run-id UUID --public-key HEX/);
  }
});

test('a file without one signed record is not a journal: empty or a lone fragment fails (exit 1)', (t) => {
  // Symbiont's verifier refuses a journal with no records; so does this one.
  const dir = tempDir(t, 'audit-cli-');
  const file = path.join(dir, `${RUN}.jsonl`);
  for (const [content, pattern] of [
    ['', /the journal holds no signed record$/],
    ['{"payload":{"version":2', /no signed record, only an unauthenticated fragment/],
  ] as const) {
    fs.writeFileSync(file, content);
    const r = inspect(file, false);
    assert.equal(r.status, 1, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.verdict, 'failed');
    assert.equal(report.records, 0);
    assert.match(report.error.message, pattern);
  }
});

test('audit list: runs newest first with agent, outcome and verification, plus the independent-key note', async (t) => {
  const dir = tempDir(t, 'audit-list-');
  const empty = symbi(['audit', 'list', '--project', dir]);
  assert.equal(empty.status, 0, empty.stderr);
  assert.match(empty.stdout, /No runs recorded/);
  assert.equal(fs.existsSync(path.join(dir, '.symbiont')), false, 'list creates nothing');

  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const agent = responsePrincipal('declared');
  const runs: string[] = [];
  for (const terminal of ['Completed', { Error: { message: 'provider failed' } }, null] as const) {
    const runId = crypto.randomUUID();
    const writer = await JournalWriter.create(storage, runId, agent);
    await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
    if (terminal !== null) await writer.appendTerminal(terminal);
    await writer.close();
    runs.push(runId);
    await new Promise((resolve) => setTimeout(resolve, 5)); // distinct start timestamps for the ordering check
  }
  // A tampered journal shows as not verifying.
  const tampered = path.join(storage.governedPath, `${agent}.${runs[0]}.jsonl`);
  const bytes = fs.readFileSync(tampered);
  bytes[bytes.indexOf('declared')] = 'D'.charCodeAt(0);
  fs.writeFileSync(tampered, bytes);

  const table = symbi(['audit', 'list', '--project', dir]);
  assert.equal(table.status, 0, table.stderr);
  const rows = table.stdout.split('\n').filter((l) => /^[0-9a-f]{8}-/.test(l));
  assert.deepEqual(
    rows.map((r) => r.slice(0, 36)),
    [runs[2], runs[1], runs[0]],
  );
  // OUTCOME, FORMAT, VERIFIES, VERDICT: a run without its Terminated record needs reconciliation whatever else it shows.
  assert.match(rows[0]!, /declared .*incomplete \(no Terminated record\)\s+\S+\s+yes\s+requires reconciliation$/);
  assert.match(rows[1]!, /declared .*error: provider failed\s+\S+\s+yes\s+complete$/);
  assert.match(rows[2]!, /verification failed\s+\S+\s+no\s+failed$/);
  assert.match(table.stdout, /Whoever can write the project can also replace that key/);
  assert.match(table.stdout, new RegExp(storage.signingKey.publicKeyHex));

  // `audit list --json` prints this listing as JSON.
  const listing = JSON.parse(JSON.stringify(listRuns(pinProject(dir))));
  assert.equal(listing.public_key, storage.signingKey.publicKeyHex);
  assert.deepEqual(
    listing.runs.map((r: { run_id: string }) => r.run_id),
    [runs[2], runs[1], runs[0]],
  );
  assert.deepEqual(
    listing.runs.map((r: { verifies: boolean }) => r.verifies),
    [true, true, false],
  );
  assert.deepEqual(
    listing.runs.map((r: { verdict: string }) => r.verdict),
    ['requires_reconciliation', 'complete', 'failed'],
  );
  assert.deepEqual(
    listing.runs.map((r: { requires_reconciliation: boolean | null }) => r.requires_reconciliation),
    [true, false, null],
  );
  assert.match(listing.note, /public key recorded elsewhere/);
});

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage, type AuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter } from '../../src/shared/journal/journal-writer.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { symbiBin } from '../support/server-entry.js';

// Every kind of tampering the issue lists, detected by `symbi audit inspect`
// with the right exit code and a message naming the first offending line.
// Lines that need a valid signature on forged content (a sequence gap,
// another principal) are signed with the project's own seed, as someone
// holding the key could.

const bin = symbiBin;
const AGENT = responsePrincipal('declared');
const PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

interface Fixture {
  dir: string;
  storage: AuditStorage;
  key: string;
  seed: Buffer;
}

// One project and key for the file: each test writes its own runs (a fresh run id, a file name of
// its own), so none sees another's; pinning a project proves its confinement route, which each
// test would otherwise pay for again.
let shared: Fixture | undefined;
after(() => {
  if (shared === undefined) return;
  closeAuditStorage(shared.storage);
  fs.rmSync(shared.dir, { recursive: true, force: true });
});

function fixture(): Fixture {
  if (shared !== undefined) return shared;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-tamper-'));
  const storage = openAuditStorage(pinProject(dir));
  const seed = fs.readFileSync(path.join(dir, '.symbiont', 'governed', 'audit-signing.key'));
  shared = { dir, storage, key: storage.signingKey.publicKeyHex, seed };
  return shared;
}

async function writeRun(f: Fixture, runId = crypto.randomUUID(), terminal = true): Promise<{ runId: string; file: string }> {
  const writer = await JournalWriter.create(f.storage, runId, AGENT);
  await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared', mode: 'text_response' } } } });
  await writer.append({ DirectInferenceRequested: { call_id: 'c1', provider: 'synthetic', model: 'm' } });
  await writer.append({ DirectInferenceResponseReceived: { call_id: 'c1', response_hash: 'a'.repeat(64), response_bytes: 10 } });
  await writer.append({ DirectInferenceFinished: { call_id: 'c1', reason: 'Completed', response_hash: 'a'.repeat(64), finish_reason: 'stop' } });
  await writer.append({ PolicyEvaluated: { action: 'respond', decision: 'allow', denied_count: 0 } });
  if (terminal) await writer.appendTerminal('Completed');
  await writer.close();
  return { runId, file: writer.path };
}

function lines(file: string): Buffer[] {
  const bytes = fs.readFileSync(file);
  const out: Buffer[] = [];
  let start = 0;
  for (let end = bytes.indexOf(10); end !== -1; end = bytes.indexOf(10, start)) {
    out.push(bytes.subarray(start, end + 1));
    start = end + 1;
  }
  return out;
}

/** In-process verifier by default (fast); `viaCli` runs the real `symbi audit inspect` command. */
function inspect(file: string, runId: string, key: string, viaCli = false) {
  if (!viaCli) {
    const { report, exitCode } = inspectJournal(file, runId, key, { crossCheck: true });
    return { status: exitCode, report: JSON.parse(JSON.stringify(report)), stderr: '' };
  }
  const r = spawnSync(process.execPath, [bin, 'audit', 'inspect', file, '--run-id', runId, '--public-key', key, '--cross-check'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.signal, null, 'inspect finished by itself');
  return { status: r.status, report: JSON.parse(r.stdout), stderr: r.stderr };
}

function expectFailure(file: string, runId: string, key: string, line: number, pattern: RegExp, viaCli = false) {
  const r = inspect(file, runId, key, viaCli);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.report.verdict, 'failed');
  assert.equal(r.report.journal_complete, false);
  assert.equal(r.report.error.line, line, r.report.error.message);
  assert.match(r.report.error.message, pattern);
  return r.report;
}

/** Signs a forged payload with the project seed and frames it as a journal line. */
const forgingKeys = new Map<string, crypto.KeyObject>();

function forgeLine(seed: Buffer, payload: string | Buffer): Buffer {
  const cached = forgingKeys.get(seed.toString('hex'));
  const key = cached ?? crypto.createPrivateKey({ key: Buffer.concat([PKCS8, seed]), format: 'der', type: 'pkcs8' });
  forgingKeys.set(seed.toString('hex'), key);
  const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8');
  const sig = crypto.sign(null, bytes, key).toString('base64');
  return Buffer.concat([Buffer.from('{"payload":'), bytes, Buffer.from(`,"signature":"${sig}"}\n`)]);
}

function sha(b: Buffer): string {
  return crypto.createHash('sha256').update(b).digest('hex');
}

/** A chain of forged records: each spec may override entry fields. */
function forgeChain(seed: Buffer, runId: string, specs: Array<{ event: unknown; sequence?: number; agent_id?: string }>): Buffer {
  let previous = '0'.repeat(64);
  const out: Buffer[] = [];
  specs.forEach((spec, i) => {
    const payload = JSON.stringify({
      version: 2,
      run_id: runId,
      previous_hash: previous,
      entry: { sequence: spec.sequence ?? i, timestamp: new Date().toISOString(), agent_id: spec.agent_id ?? AGENT, iteration: 1, event: spec.event },
    });
    const line = forgeLine(seed, payload);
    previous = sha(line);
    out.push(line);
  });
  return Buffer.concat(out);
}

test('one byte changed in a payload: bad signature on that line (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const ls = lines(file);
  const i = ls[2]!.indexOf('response_bytes":10');
  ls[2]![i + 16] = '9'.charCodeAt(0);
  fs.writeFileSync(file, Buffer.concat(ls));
  expectFailure(file, runId, f.key, 3, /line 3: bad signature/, true);
});

test('a signature swapped between two lines: bad signature (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const ls = lines(file);
  const sigOf = (l: Buffer) => l.subarray(l.lastIndexOf(',"signature":"'));
  const a = ls[1]!,
    b = ls[2]!;
  ls[1] = Buffer.concat([a.subarray(0, a.lastIndexOf(',"signature":"')), sigOf(b)]);
  ls[2] = Buffer.concat([b.subarray(0, b.lastIndexOf(',"signature":"')), sigOf(a)]);
  fs.writeFileSync(file, Buffer.concat(ls));
  expectFailure(file, runId, f.key, 2, /line 2: bad signature/);
});

test('two lines swapped: broken chain (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const ls = lines(file);
  [ls[2], ls[3]] = [ls[3]!, ls[2]!];
  fs.writeFileSync(file, Buffer.concat(ls));
  expectFailure(file, runId, f.key, 3, /broken chain at line 3/, true);
});

test('a line removed: broken chain (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const ls = lines(file);
  ls.splice(2, 1);
  fs.writeFileSync(file, Buffer.concat(ls));
  expectFailure(file, runId, f.key, 3, /broken chain at line 3/);
});

test('the first line removed: broken chain at line 1 (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  fs.writeFileSync(file, Buffer.concat(lines(file).slice(1)));
  expectFailure(file, runId, f.key, 1, /broken chain at line 1/);
});

test('a line duplicated: broken chain (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const ls = lines(file);
  ls.splice(3, 0, ls[2]!);
  fs.writeFileSync(file, Buffer.concat(ls));
  expectFailure(file, runId, f.key, 4, /broken chain at line 4/);
});

test("another run's journal under this run's name: other run (exit 1)", async () => {
  const f = fixture();
  const ours = crypto.randomUUID();
  const { runId: theirs, file } = await writeRun(f);
  const renamed = path.join(path.dirname(file), `${ours}.jsonl`);
  fs.copyFileSync(file, renamed);
  expectFailure(renamed, ours, f.key, 1, new RegExp(`line 1: other run: the record belongs to run ${theirs}`));
});

test('a truncated last line: exit 2 with unverified_tail_bytes', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const bytes = fs.readFileSync(file);
  const cutBy = 40;
  fs.writeFileSync(file, bytes.subarray(0, bytes.length - cutBy));
  const lastLength = lines(file).length; // complete lines left
  const r = inspect(file, runId, f.key, true);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.report.verdict, 'requires_reconciliation');
  assert.equal(r.report.records, lastLength);
  const tail = fs.readFileSync(file).length - Buffer.concat(lines(file)).length;
  assert.equal(r.report.unverified_tail_bytes, tail);
  assert.ok(tail > 0);
  assert.equal(r.report.terminal_reason, null);
});

test('garbage appended as a complete line fails (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  assert.equal(inspect(file, runId, f.key).status, 0, 'the untouched journal is complete');
  fs.appendFileSync(file, 'garbage\n');
  expectFailure(file, runId, f.key, 7, /line 7: malformed line/);
});

test('a final fragment always needs reconciliation (exit 2), even after Terminated and whatever it holds', async () => {
  // Symbiont docs/crash-inspection.md: the fragment is unauthenticated and may be interruption or tampering.
  const f = fixture();
  const { runId, file } = await writeRun(f);
  const original = fs.readFileSync(file);
  fs.writeFileSync(file, Buffer.concat([original, Buffer.from('garbage')]));
  const r = inspect(file, runId, f.key, true);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.report.verdict, 'requires_reconciliation');
  assert.equal(r.report.unverified_tail_bytes, 7);
  assert.equal(r.report.verified_bytes, original.length);
  assert.equal(r.report.terminal_reason, 'Completed');
  assert.equal(r.report.journal_complete, false, 'an unverified tail keeps the journal from being complete');
  assert.ok(r.report.warnings.some((w: string) => /final fragment of 7 bytes/.test(w)));
  assert.equal(fs.readFileSync(file).length, original.length + 7, 'inspect never truncates');

  const unterminated = await writeRun(f, crypto.randomUUID(), false);
  fs.appendFileSync(unterminated.file, 'xyz');
  const u = inspect(unterminated.file, unterminated.runId, f.key);
  assert.equal(u.status, 2);
  assert.equal(u.report.unverified_tail_bytes, 3);
  assert.equal(u.report.terminal_reason, null);
});

test('a missing terminal record: exit 2', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  fs.writeFileSync(file, Buffer.concat(lines(file).slice(0, -1)));
  const r = inspect(file, runId, f.key, true);
  assert.equal(r.status, 2, r.stderr);
  assert.equal(r.report.journal_complete, false);
  assert.equal(r.report.requires_reconciliation, true);
  assert.ok(r.report.warnings.some((w: string) => /^no Terminated record/.test(w)));
});

test('the wrong public key: bad signature on line 1 (exit 1)', async () => {
  const f = fixture();
  const { runId, file } = await writeRun(f);
  expectFailure(file, runId, '11'.repeat(32), 1, /line 1: bad signature/);
});

test('forged records with valid signatures: sequence gap, other principal, order errors (exit 1)', async () => {
  const f = fixture();
  const runId = crypto.randomUUID();
  const file = path.join(f.dir, 'forged.jsonl');
  const started = { Started: { execution_context: { agent_definition: { name: 'declared' } } } };
  const done = { Terminated: { reason: 'Completed' } };

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: { PolicyEvaluated: {} } }, { event: done }]));
  const ok = inspect(file, runId, f.key);
  assert.equal(ok.status, 0, ok.stderr);

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: { PolicyEvaluated: {} }, sequence: 2 }, { event: done }]));
  expectFailure(file, runId, f.key, 2, /line 2: sequence gap: expected sequence 1, found 2/);

  const other = responsePrincipal('someone-else');
  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: { PolicyEvaluated: {} }, agent_id: other }, { event: done }]));
  expectFailure(file, runId, f.key, 2, new RegExp(`line 2: other principal: agent_id ${other}`));

  // No Started first: signed, so reported rather than failed, but never complete (as Symbiont's inspect).
  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: { PolicyEvaluated: {} } }, { event: done }]));
  const unstarted = inspect(file, runId, f.key);
  assert.equal(unstarted.status, 2, JSON.stringify(unstarted.report));
  assert.equal(unstarted.report.journal_complete, false);
  assert.equal(unstarted.report.started_at, null);
  assert.ok(unstarted.report.warnings.some((w: string) => /does not begin with a signed Started record/.test(w)));

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: { PolicyEvaluated: {} } }, { event: started }, { event: done }]));
  expectFailure(file, runId, f.key, 2, /line 2: a Started record that is not the first record/);

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: done }, { event: { PolicyEvaluated: {} } }]));
  expectFailure(file, runId, f.key, 3, /line 3: a record follows the Terminated record/);

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: { A: {}, B: {} } }]));
  expectFailure(file, runId, f.key, 2, /line 2: malformed line: event is not an object with exactly one key/);

  fs.writeFileSync(file, forgeChain(f.seed, runId, [{ event: started }, { event: { DirectInferenceFinished: { call_id: 'ghost' } } }]));
  expectFailure(file, runId, f.key, 2, /never requested/);
});

test('hostile but validly signed payloads never crash the verifier', async () => {
  const f = fixture();
  const runId = crypto.randomUUID();
  const file = path.join(f.dir, 'hostile.jsonl');
  const started = forgeChain(f.seed, runId, [{ event: { Started: {} } }]);

  // Deeply nested JSON inside a signed payload, just under the line limit: refused at the nesting bound, not read on.
  const depth = 400_000;
  const deep = `{"version":2,"run_id":"${runId}","previous_hash":"${sha(started)}","entry":{"sequence":1,"timestamp":"2025-01-01T00:00:00.000Z","agent_id":"${AGENT}","iteration":1,"event":{"Deep":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}}}`;
  fs.writeFileSync(file, Buffer.concat([started, forgeLine(f.seed, deep)]));
  expectFailure(file, runId, f.key, 2, /line 2: malformed line: .*nested deeper than 16 levels/);

  // A deep terminal reason is malformed, and is never echoed into the report.
  const deepReason = `{"version":2,"run_id":"${runId}","previous_hash":"${sha(started)}","entry":{"sequence":1,"timestamp":"2025-01-01T00:00:00.000Z","agent_id":"${AGENT}","iteration":1,"event":{"Terminated":{"reason":${'['.repeat(depth)}${']'.repeat(depth)}}}}}`;
  fs.writeFileSync(file, Buffer.concat([started, forgeLine(f.seed, deepReason)]));
  expectFailure(file, runId, f.key, 2, /entry\.event\.Terminated\.reason.*: nested deeper than 16 levels/);

  // Invalid UTF-8 inside a signed payload.
  const bad = Buffer.concat([Buffer.from(`{"version":2,"run_id":"${runId}","x":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  fs.writeFileSync(file, Buffer.concat([started, forgeLine(f.seed, bad)]));
  expectFailure(file, runId, f.key, 2, /line 2: malformed line: the payload is not valid UTF-8/);

  // A line over 1 MiB.
  fs.writeFileSync(file, Buffer.concat([started, Buffer.alloc(1024 * 1024 + 1, 0x61), Buffer.from('\n')]));
  expectFailure(file, runId, f.key, 2, /line 2 is 1048578 bytes; a journal line is at most 1048576 bytes/);

  // A final fragment over 1 MiB.
  fs.writeFileSync(file, Buffer.concat([started, Buffer.alloc(1024 * 1024 + 1, 0x61)]));
  expectFailure(file, runId, f.key, 2, /tail fragment of 1048577 bytes is longer than a journal line may be/);

  // Not even JSON-shaped.
  fs.writeFileSync(file, Buffer.from([0x00, 0xff, 0x0a]));
  expectFailure(file, runId, f.key, 1, /line 1: malformed line/);
});

test('more than 32,768 tracked operations fail explicitly, as Symbiont documents (exit 1)', async () => {
  const f = fixture();
  const runId = crypto.randomUUID();
  const file = path.join(f.dir, 'many-calls.jsonl');
  const specs: Array<{ event: unknown }> = [{ event: { Started: {} } }];
  for (let i = 0; i <= 32_768; i += 1) specs.push({ event: { DirectInferenceRequested: { call_id: `c${i}` } } });
  fs.writeFileSync(file, forgeChain(f.seed, runId, specs));
  // Line 32,770 holds the 32,769th request. (Node.js crypto only: tweetnacl would take minutes here.)
  const { exitCode, report } = inspectJournal(file, runId, f.key);
  assert.equal(exitCode, 1);
  assert.equal(report.error?.line, 32_770);
  assert.match(report.error?.message ?? '', /more than 32768 tracked operations/);
});

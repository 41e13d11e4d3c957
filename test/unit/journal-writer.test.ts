import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage, type AuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalTakenError, JournalWriter, JournalWriteError } from '../../src/shared/journal/journal-writer.js';
import { JournalHandover } from '../../src/shared/journal/journal-handover.js';
import { JOURNAL_TURNS_PER_THREAD } from '../../src/shared/journal/journal-turns.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { repoRoot as repo } from '../support/server-entry.js';

// The writer's own guarantees: exclusive private files, one chain it can
// vouch for (foreign bytes or truncation stop every later effect record but
// not the terminal attempt), the line limit, and record order.

const AGENT = responsePrincipal('declared');
const STARTED = { Started: { execution_context: { agent_definition: { name: 'declared' } } } };

function setup(t: { after(fn: () => void): void }): { dir: string; storage: AuditStorage } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-writer-'));
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => {
    closeAuditStorage(storage);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir, storage };
}

test('foreign bytes appended between two records fail the next append and every later effect append', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append(STARTED);
  fs.appendFileSync(writer.path, '{"payload":"planted"}\n');
  await assert.rejects(writer.append({ PolicyEvaluated: { decision: 'allow' } }), (err: unknown) => {
    assert.ok(err instanceof JournalWriteError);
    assert.match(err.message, /22 foreign bytes were added after record 0/);
    return true;
  });
  await assert.rejects(writer.append({ PolicyEvaluated: { decision: 'allow' } }), JournalWriteError);
  // The terminal record is still attempted and lands after the foreign bytes.
  await writer.appendTerminal({ Error: { message: 'journal tampered with' } });
  await writer.close();
  const text = fs.readFileSync(writer.path, 'utf8');
  assert.equal(text.split('\n').length, 4);
  assert.match(text.split('\n')[2]!, /"Terminated"/);
  const { exitCode, report } = inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex);
  assert.equal(exitCode, 1);
  assert.equal(report.error?.line, 2);
});

// Symbiont's writer rule (protected_journal.rs, ProtectedJournal::append): nothing that starts an
// effect after a record with an unconfirmed outcome; the run's end is still written.
const FAILED_FINISH = { DirectInferenceFinished: { call_id: 'c1', reason: { Error: { message: 'HTTP 500' } } } };

test("Symbiont's writer rule: no request after a failed finish, in one group or later; the end is still written", async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
  const before = fs.statSync(writer.path).size;
  await assert.rejects(
    writer.appendAll([FAILED_FINISH, { DirectInferenceRequested: { call_id: 'c2' } }]),
    /DirectInferenceRequested refused after record 2: execution stopped after an unconfirmed outcome; reconciliation is required/,
  );
  assert.equal(fs.statSync(writer.path).size, before, 'nothing of the refused group was written');
  await writer.append(FAILED_FINISH);
  await assert.rejects(writer.append({ BudgetReservationStarted: {} }), /BudgetReservationStarted refused after record 2/);
  await assert.rejects(writer.append({ Started: {} }), /refused after record 2/);
  // What starts nothing may follow, and the terminal record always may.
  await writer.appendTerminal({ Error: { message: 'Inference failed: HTTP 500' } });
  await writer.close();
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 2);
});

test("Symbiont's writer rule survives a resume: the owner's writer refuses a request after a failed finish", async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }, FAILED_FINISH]);
  await writer.close();
  const resumed = await JournalWriter.resume(storage, runId, AGENT);
  await assert.rejects(resumed.append({ DirectInferenceRequested: { call_id: 'c2' } }), /refused after record 2/);
  await resumed.appendTerminal({ Error: { message: 'the worker running this invocation failed' } });
  await resumed.close();
});

// The one check before the signature (journal-verifier.ts unsignableProblem): a record `audit inspect`
// or Symbiont's types would refuse is never signed, the group is not written, and the run can end.
const HASH = `sha256:${'0'.repeat(64)}`;
function answeredFinish(usage: Record<string, number>): { iteration: number; event: never } {
  const fields = { call_id: 'c1', reason: 'Completed', response_hash: HASH, response_bytes: 10, finish_reason: 'stop', usage };
  return { iteration: 1, event: { DirectInferenceFinished: fields } as never };
}

for (const [label, record, why] of [
  ['a token count above u32', answeredFinish({ prompt_tokens: 2 ** 32, completion_tokens: 1, total_tokens: 2 ** 32 + 1 }), /prompt_tokens is above 4294967295/],
  ['a count above 2^53-1', answeredFinish({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 ** 60 }), /is above 9007199254740991/],
  ['an unpaired surrogate', { ReasoningComplete: { iteration: 1, actions: [{ Respond: { content: 'a \ud800 b' } }] } }, /unpaired UTF-16 surrogate/],
  [
    'a negative status',
    { DirectInferenceFinished: { call_id: 'c1', error: { status: -1 } } },
    /the number -1 is not written as the journal writer writes numbers/,
  ],
] as const) {
  test(`the writer refuses to sign ${label}, writes nothing of the group, and the run still ends verifiably`, async (t) => {
    const { storage } = setup(t);
    const runId = crypto.randomUUID();
    const writer = await JournalWriter.create(storage, runId, AGENT);
    await writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
    const before = fs.statSync(writer.path).size;
    await assert.rejects(writer.appendAll([record, { PolicyEvaluated: { decision: 'deny' } }]), (err: unknown) => {
      assert.ok(err instanceof JournalWriteError);
      assert.match(err.message, /record 2 \(\w+\) would not verify, so it was not signed/);
      assert.match(err.message, why);
      return true;
    });
    assert.equal(fs.statSync(writer.path).size, before);
    // Even a terminal message cut inside a surrogate pair is made well-formed before it is signed.
    await writer.appendTerminal({ Error: { message: `${'x'.repeat(4095)}\u{1F600}` } });
    await writer.close();
    const { exitCode, report } = inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex);
    assert.equal(exitCode, 2, JSON.stringify(report));
    assert.equal(report.journal_complete, true);
  });
}

test('a truncated journal fails the next effect append', async (t) => {
  const { storage } = setup(t);
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT);
  await writer.append(STARTED);
  await writer.append({ DirectInferenceRequested: { call_id: 'c1' } });
  fs.truncateSync(writer.path, 10);
  await assert.rejects(writer.append({ DirectInferenceFinished: { call_id: 'c1' } }), /the journal was truncated to 10 bytes/);
  await writer.close();
});

test('a record over the 1 MiB line limit is refused and nothing is written', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append(STARTED);
  const before = fs.statSync(writer.path).size;
  await assert.rejects(writer.append({ PolicyEvaluated: { note: 'x'.repeat(1024 * 1024) } }), /a journal line is at most 1048576 bytes/);
  assert.equal(fs.statSync(writer.path).size, before);
  // The chain is intact, so the run can still record its end.
  await writer.appendTerminal({ Error: { message: 'record too large' } });
  await writer.close();
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 0);
});

test('record order: Started first, Terminated only through appendTerminal and last', async (t) => {
  const { storage } = setup(t);
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT);
  await assert.rejects(writer.append({ PolicyEvaluated: {} }), /the first record of a journal must be Started/);
  await writer.append(STARTED);
  await assert.rejects(writer.append({ Terminated: { reason: 'Completed' } }), /written with appendTerminal/);
  await assert.rejects(writer.append({ A: {}, B: {} }), /exactly one key/);
  await assert.rejects(writer.append({ A: 'text' }), /must be an object/);
  await assert.rejects(writer.appendTerminal('Done' as 'Completed'), /"Completed", \{ Error/);
  await writer.appendTerminal('Completed');
  await assert.rejects(writer.append({ PolicyEvaluated: {} }), /already has its Terminated record/);
  await assert.rejects(writer.appendTerminal('Completed'), /already has its Terminated record/);
  await writer.close();
  await assert.rejects(writer.append(STARTED), /closed/);
  assert.equal(writer.records, 2);
});

test('journals are created exclusively, mode 0600, never through a symlink, named only by a UUID', async (t) => {
  const { dir, storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  assert.equal(fs.statSync(writer.path).mode & 0o777, 0o600);
  await assert.rejects(JournalWriter.create(storage, runId, AGENT), /already exists; journals are never reused/);
  await writer.close();

  const planted = crypto.randomUUID();
  const target = path.join(dir, 'target.txt');
  fs.symlinkSync(target, path.join(dir, '.symbiont', 'governed', `${AGENT}.${planted}.jsonl`));
  await assert.rejects(JournalWriter.create(storage, planted, AGENT), JournalWriteError);
  assert.equal(fs.existsSync(target), false, 'nothing was created through the symlink');

  await assert.rejects(JournalWriter.create(storage, '../../escape', AGENT), /is not a lowercase UUID/);
  await assert.rejects(JournalWriter.create(storage, crypto.randomUUID(), 'declared'), /agent id .* is not a lowercase UUID/);
});

test('the writer works from a worker thread sharing the pinned descriptor', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-worker-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const project = pinProject(dir);
  t.after(() => fs.closeSync(project.fd));
  const runId = crypto.randomUUID();
  const dist = (p: string) => pathToFileURL(path.join(repo, 'dist', 'shared', p)).href;
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    (async () => {
      const { PinnedDirectory } = await import(${JSON.stringify(dist('confinement/index.js'))});
      const { openAuditStorage } = await import(${JSON.stringify(dist('storage/audit-storage.js'))});
      const { JournalWriter } = await import(${JSON.stringify(dist('journal/journal-writer.js'))});
      const storage = openAuditStorage(PinnedDirectory.fromDescriptor(workerData.fd, workerData.shown, workerData.route));
      const writer = await JournalWriter.create(storage, workerData.runId, workerData.agent);
      await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
      await writer.appendTerminal('Completed');
      await writer.close();
      parentPort.postMessage({ path: writer.path, key: storage.signingKey.publicKeyHex });
    })().catch((err) => parentPort.postMessage({ error: String(err) }));`;
  const worker = new Worker(code, { eval: true, workerData: { fd: project.fd, shown: project.displayPath, route: project.route.name, runId, agent: AGENT } });
  const result = await new Promise<{ path?: string; key?: string; error?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(result.error, undefined);
  const { exitCode } = inspectJournal(result.path!, runId, result.key!);
  assert.equal(exitCode, 0);
});

test('resume continues a verified chain left by a writer that is gone, and refuses anything else', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const first = await JournalWriter.create(storage, runId, AGENT);
  await first.append(STARTED);
  await first.append({ DirectInferenceRequested: { call_id: 'c1' } });
  await first.close(); // the worker died here

  // A journal's name carries its principal (Symbiont's <agent_id>.<run_id>.jsonl): another principal finds none.
  await assert.rejects(JournalWriter.resume(storage, runId, responsePrincipal('other')), /there is no journal to resume/);
  const resumed = await JournalWriter.resume(storage, runId, AGENT);
  assert.equal(resumed.records, 2);
  await resumed.append({ DirectInferenceFinished: { call_id: 'c1', reason: { Error: { message: 'worker died' } } } });
  await resumed.appendTerminal({ Error: { message: 'worker died' } });
  await resumed.close();
  const { exitCode, report } = inspectJournal(resumed.path, runId, storage.signingKey.publicKeyHex);
  // Complete, but the call's effect is unknown: its recorded finish is an error.
  assert.equal(exitCode, 2, report.error?.message);
  assert.equal(report.journal_complete, true);
  assert.equal(report.records, 4);
  assert.deepEqual([report.effects[0]!.outcome, report.effects[0]!.finish_sequence], ['unknown', 2]);

  await assert.rejects(JournalWriter.resume(storage, runId, AGENT), /already has its Terminated record/);
  await assert.rejects(JournalWriter.resume(storage, crypto.randomUUID(), AGENT), /there is no journal to resume/);

  const torn = crypto.randomUUID();
  const w = await JournalWriter.create(storage, torn, AGENT);
  await w.append(STARTED);
  await w.close();
  fs.appendFileSync(w.path, '{"payload":{"ver');
  await assert.rejects(JournalWriter.resume(storage, torn, AGENT), /unauthenticated fragment of 16 bytes/);
  fs.appendFileSync(w.path, '\n');
  await assert.rejects(JournalWriter.resume(storage, torn, AGENT), /not resumed: line 2: malformed line/);
});

test('a Terminated record is never written without a Started record before it or with it', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await assert.rejects(writer.appendTerminal({ Error: { message: 'storage failed' } }), /a Terminated record needs a durable Started record before it/);
  assert.equal(fs.statSync(writer.path).size, 0, 'nothing was written');
  // Together with its Started record, in one write, it is allowed.
  await writer.appendTerminal({ Error: { message: 'cancelled before the request' } }, [STARTED]);
  await writer.close();
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 0);
});

test('resume refuses a journal that does not begin with Started', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const seed = fs.readFileSync(path.join(storage.governedPath, 'audit-signing.key'));
  // A validly signed journal whose first record is not Started (only a key holder can make one).
  const key = crypto.createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  const payload = JSON.stringify({
    version: 2,
    run_id: runId,
    previous_hash: '0'.repeat(64),
    entry: { sequence: 0, timestamp: new Date().toISOString(), agent_id: AGENT, iteration: 1, event: { PolicyEvaluated: {} } },
  });
  const line = `{"payload":${payload},"signature":"${crypto.sign(null, Buffer.from(payload), key).toString('base64')}"}\n`;
  fs.writeFileSync(path.join(storage.governedPath, `${AGENT}.${runId}.jsonl`), line, { mode: 0o600 });
  assert.equal(inspectJournal(path.join(storage.governedPath, `${AGENT}.${runId}.jsonl`), runId, storage.signingKey.publicKeyHex).exitCode, 2);
  await assert.rejects(JournalWriter.resume(storage, runId, AGENT), /does not begin with a Started record; not resumed/);
});

test('appends made without waiting for each other are written one at a time, in call order, and the chain verifies', async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  // Not awaited in between: each append's sync is still pending when the next one is called.
  const appends = [
    writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]),
    writer.append({ DirectInferenceResponseReceived: { call_id: 'c1' } }),
    writer.append({ DirectInferenceFinished: { call_id: 'c1' } }),
    writer.appendTerminal('Completed', [{ PolicyEvaluated: { decision: 'allow' } }], { urgent: true }),
  ];
  const closed = writer.close();
  await Promise.all([...appends, closed]);
  const events = fs
    .readFileSync(writer.path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => Object.keys((JSON.parse(line) as { payload: { entry: { event: object } } }).payload.entry.event)[0]);
  assert.deepEqual(events, [
    'Started',
    'DirectInferenceRequested',
    'DirectInferenceResponseReceived',
    'DirectInferenceFinished',
    'PolicyEvaluated',
    'Terminated',
  ]);
  // The chain verifies whole (the bare test records leave the call's outcome unknown, hence reconciliation).
  const { report } = inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex);
  assert.equal(report.journal_complete, true, JSON.stringify(report));
  assert.equal(report.verified_records, 6);
  assert.equal(report.unverified_tail_bytes, 0);
});

/** Keeps every thread of libuv's pool busy for a while (pbkdf2 runs there); `events` gets one entry as each is freed. */
function occupyLibuvPool(events: string[]): Promise<unknown> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  return Promise.all(
    Array.from(
      { length: threads },
      () => new Promise<void>((resolve) => crypto.pbkdf2('p', 's', 400_000, 32, 'sha256', () => resolve(void events.push('a pool thread free')))),
    ),
  );
}

test("a stopped run's sync waiting on libuv's pool is finished at once in its own thread, and the descriptor outlives the pool's call", async (t) => {
  const { storage } = setup(t);
  const runId = crypto.randomUUID();
  const stop = new AbortController();
  const writer = await JournalWriter.create(storage, runId, AGENT, { stopSignal: stop.signal });
  // The pool busy, so the append's sync queues behind its work.
  const events: string[] = [];
  const poolBusy = occupyLibuvPool(events);
  const appended = writer.appendAll([STARTED]).then(() => events.push('records durable'));
  await new Promise((resolve) => setImmediate(resolve));
  stop.abort();
  await appended;
  assert.deepEqual(events, ['records durable'], 'the records were made durable while the pool was still busy');
  await writer.appendTerminal({ Error: { message: 'the caller cancelled the invocation' } }, [], { urgent: true });
  const closed = writer.close().then(() => events.push('closed'));
  await Promise.all([poolBusy, closed]);
  // The queued sync can only run once a pool thread is free; the descriptor stays open until it has.
  assert.deepEqual(events.slice(0, 2), ['records durable', 'a pool thread free'], 'the journal is closed only after the pool has run its queued sync');
  assert.ok(events.includes('closed'));
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 0);
});

test('an append syncs in its own thread when its owner says no other run needs the thread, and on the pool otherwise', async (t) => {
  const { storage } = setup(t);
  let alone = true;
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { syncInThread: () => alone });
  const events: string[] = [];
  let poolBusy = occupyLibuvPool(events);
  await writer.appendAll([STARTED]).then(() => events.push('alone: durable'));
  await poolBusy;
  assert.equal(events[0], 'alone: durable', 'synced in the thread while every pool thread was busy');
  alone = false;
  events.length = 0;
  poolBusy = occupyLibuvPool(events);
  await writer.append({ DirectInferenceRequested: { call_id: 'c1' } }).then(() => events.push('shared: durable'));
  await poolBusy;
  assert.equal(events[0], 'a pool thread free', 'synced on the pool, once a pool thread was free');
  await writer.close();
});

// The handover (journal-handover.ts): the owner may take the journal only between two of the
// writer's writes, and once it has, the writer writes nothing more.
test('handover: the owner takes the journal only between writes; the writer then writes nothing', async (t) => {
  const { storage } = setup(t);
  const handover = new JournalHandover();
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { handover });
  assert.equal(handover.take(), false, 'no record is durable yet: only the writer can end the run');
  const first = writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
  assert.equal(handover.take(), false, 'not while a write is on its way to the disk');
  await first;
  // A record only the writer can write is pending (a call's finish, which lists the attempts only it knows).
  assert.equal(handover.hold(), true);
  assert.equal(handover.take(), false, 'not while the writer holds a pending record');
  await writer.appendAll([{ DirectInferenceFinished: { call_id: 'c1', reason: 'Completed' } }, { DirectInferenceRequested: { call_id: 'c2' } }]);
  const before = fs.readFileSync(writer.path);
  assert.equal(handover.take(), true, 'between two writes');
  await assert.rejects(writer.append({ DirectInferenceFinished: { call_id: 'c2' } }), JournalTakenError);
  await assert.rejects(writer.appendTerminal({ Error: { message: 'late' } }), JournalTakenError);
  await writer.close();
  assert.deepEqual(fs.readFileSync(writer.path), before, 'the writer wrote nothing after the owner took the journal');
});

// Turns (journal-turns.ts): a worker thread's run waits for the disk before it names its journal
// or writes a record, so that meanwhile its owner can end it; a stopped run does not wait.
/** Writers that each hold one of this thread's turns (taken by create, kept until the first write or close). */
async function holdEveryTurn(t: { after(fn: () => Promise<void>): void }, storage: AuditStorage): Promise<JournalWriter[]> {
  const running = new AbortController();
  const holders: JournalWriter[] = [];
  // Given back whatever the test's outcome, so the next test finds every turn free.
  t.after(async () => {
    for (const holder of holders) await holder.close();
  });
  for (let i = 0; i < JOURNAL_TURNS_PER_THREAD; i += 1)
    holders.push(await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { stopSignal: running.signal }));
  return holders;
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('turns: a run waiting for the disk has no journal yet; it names one once a turn is free', { timeout: 20_000 }, async (t) => {
  const { storage } = setup(t);
  const holders = await holdEveryTurn(t, storage);
  const runId = crypto.randomUUID();
  const expected = path.join(path.dirname(holders[0]!.path), `${AGENT}.${runId}.jsonl`);
  let named = false;
  const waiting = JournalWriter.create(storage, runId, AGENT, { stopSignal: new AbortController().signal }).then((writer) => {
    named = true;
    return writer;
  });
  await settle();
  assert.equal(named, false, 'every turn is held');
  assert.equal(fs.existsSync(expected), false, 'no journal is named while the run waits, so its owner could claim the run');
  await holders[0]!.close();
  const writer = await waiting;
  assert.equal(writer.path, expected);
  assert.ok(fs.existsSync(expected));
  await writer.append(STARTED);
  await writer.close();
});

test('turns: while a write waits for its turn the journal is open, and the owner who takes it ends the run', { timeout: 20_000 }, async (t) => {
  const { storage } = setup(t);
  const handover = new JournalHandover();
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { handover, stopSignal: new AbortController().signal });
  await writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
  const holders = await holdEveryTurn(t, storage);
  const before = fs.readFileSync(writer.path);
  const response = writer.appendAll([{ DirectInferenceResponseReceived: { call_id: 'c1' } }, { DirectInferenceFinished: { call_id: 'c1' } }]);
  await settle();
  assert.equal(handover.take(), true, 'the last record is durable and nothing is on its way to the disk');
  const refused = assert.rejects(response, JournalTakenError);
  await holders[0]!.close();
  await refused;
  assert.deepEqual(fs.readFileSync(writer.path), before, 'the waiting write was never made');
  await writer.close();
});

test('turns: a stopped run does not wait, and a run stopped while it waits goes at once', { timeout: 20_000 }, async (t) => {
  const { storage } = setup(t);
  await holdEveryTurn(t, storage);
  // Every turn stays held until the end of the test: these complete only because they do not wait.
  const stopped = new AbortController();
  stopped.abort();
  const early = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { stopSignal: stopped.signal });
  await early.append(STARTED);
  await early.appendTerminal({ Error: { message: 'the caller cancelled the invocation' } });

  const stop = new AbortController();
  let named = false;
  const waiting = JournalWriter.create(storage, crypto.randomUUID(), AGENT, { stopSignal: stop.signal }).then((writer) => {
    named = true;
    return writer;
  });
  await settle();
  assert.equal(named, false, 'every turn is held');
  stop.abort();
  const late = await waiting;
  await late.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
  await late.appendTerminal({ Error: { message: 'the caller cancelled the invocation' } }, [{ DirectInferenceFinished: { call_id: 'c1' } }], { urgent: true });
  for (const writer of [early, late]) {
    await writer.close();
    const { report } = inspectJournal(writer.path, writer.runId, storage.signingKey.publicKeyHex);
    assert.notEqual(report.verdict, 'failed');
    assert.equal(report.journal_complete, true);
  }
});

test("turns: a run stopped while it waits makes every sync in its own thread, its new journal's directory entry too", { timeout: 20_000 }, async (t) => {
  const { storage } = setup(t);
  await holdEveryTurn(t, storage);
  const stop = new AbortController();
  const waiting = JournalWriter.create(storage, crypto.randomUUID(), AGENT, { stopSignal: stop.signal });
  await settle();
  // The pool busy: a sync started on it now would wait for a pool thread.
  const events: string[] = [];
  const poolBusy = occupyLibuvPool(events);
  stop.abort();
  const writer = await waiting;
  await writer.appendAll([STARTED, { DirectInferenceRequested: { call_id: 'c1' } }]);
  events.push('first records durable');
  await writer.appendTerminal({ Error: { message: 'the caller cancelled the invocation' } }, [{ DirectInferenceFinished: { call_id: 'c1' } }]);
  events.push('terminal record durable');
  await poolBusy;
  assert.deepEqual(events.slice(0, 2), ['first records durable', 'terminal record durable'], 'no sync of the stopped run waited for the pool');
  await writer.close();
  assert.equal(inspectJournal(writer.path, writer.runId, storage.signingKey.publicKeyHex).report.journal_complete, true);
});

test('handover: a journal whose writer wrote Terminated, or whose file it no longer trusts, is never taken', async (t) => {
  const { storage } = setup(t);
  const ended = new JournalHandover();
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { handover: ended });
  await writer.append(STARTED);
  await writer.appendTerminal('Completed');
  assert.equal(ended.take(), false);
  await writer.close();

  const tampered = new JournalHandover();
  const other = await JournalWriter.create(storage, crypto.randomUUID(), AGENT, { handover: tampered });
  await other.append(STARTED);
  fs.appendFileSync(other.path, '{"payload":"planted"}\n');
  await assert.rejects(other.append({ PolicyEvaluated: { decision: 'allow' } }), JournalWriteError);
  assert.equal(tampered.take(), false, 'the writer alone records its end after foreign bytes');
  await other.appendTerminal({ Error: { message: 'journal tampered with' } });
  await other.close();
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nacl from 'tweetnacl';
import { pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage, type AuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter, JournalWriteError } from '../../src/shared/journal/journal-writer.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';

// Grouped appends write several chained records with one sync. The chain must
// be exactly what single appends produce, and a group never slips past the
// tamper check that guards single effect records.

const AGENT = responsePrincipal('declared');
const STARTED = { Started: { execution_context: { agent_definition: { name: 'declared' } } } };

function setup(t: { after(fn: () => void): void }): AuditStorage {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-batch-'));
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => {
    closeAuditStorage(storage);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return storage;
}

test('grouped records chain, sequence and verify like single ones (Node.js crypto and tweetnacl)', async (t) => {
  const storage = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append(STARTED);
  await writer.append({ DirectInferenceRequested: { call_id: 'c1' } });
  await writer.appendAll([
    { DirectInferenceResponseReceived: { call_id: 'c1' } },
    { DirectInferenceFinished: { call_id: 'c1', reason: 'Completed', response_hash: 'a'.repeat(64) } },
  ]);
  await writer.appendTerminal('Completed', [{ PolicyEvaluated: { decision: 'allow' } }]);
  await writer.close();
  const lines = fs.readFileSync(writer.path, 'utf8').split('\n').filter(Boolean);
  assert.equal(lines.length, 6);
  let previous = '0'.repeat(64);
  const publicKey = Buffer.from(storage.signingKey.publicKeyHex, 'hex');
  lines.forEach((line, index) => {
    const parsed = JSON.parse(line) as { payload: { previous_hash: string; entry: { sequence: number } }; signature: string };
    assert.equal(parsed.payload.entry.sequence, index);
    assert.equal(parsed.payload.previous_hash, previous);
    const payloadBytes = Buffer.from(line.slice('{"payload":'.length, line.lastIndexOf(',"signature":')), 'utf8');
    assert.ok(nacl.sign.detached.verify(payloadBytes, Buffer.from(parsed.signature, 'base64'), publicKey));
    previous = crypto.createHash('sha256').update(`${line}\n`).digest('hex');
  });
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex, { crossCheck: true }).exitCode, 0);
});

test('a group cannot carry a Terminated record or start a journal with anything but Started', async (t) => {
  const storage = setup(t);
  const writer = await JournalWriter.create(storage, crypto.randomUUID(), AGENT);
  await assert.rejects(writer.appendAll([{ DirectInferenceRequested: { call_id: 'c' } }]), /must be Started/);
  await writer.append(STARTED);
  await assert.rejects(writer.appendAll([{ Terminated: { reason: 'Completed' } }]), /appendTerminal/);
  await assert.rejects(writer.appendAll([]), /no records/);
  await writer.close();
});

test('foreign bytes stop a grouped decision-and-terminal write; the bare terminal is still attempted', async (t) => {
  const storage = setup(t);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append(STARTED);
  fs.appendFileSync(writer.path, 'x\n');
  await assert.rejects(
    writer.appendTerminal('Completed', [{ PolicyEvaluated: { decision: 'allow' } }]),
    (err: unknown) => err instanceof JournalWriteError && /foreign bytes/.test(err.message),
  );
  const before = fs.readFileSync(writer.path, 'utf8');
  assert.ok(!before.includes('PolicyEvaluated'), 'nothing of the group was written');
  await writer.appendTerminal({ Error: { message: 'journal tampered with' } });
  await writer.close();
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 1);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { PinnedDirectory, pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter } from '../../src/shared/journal/journal-writer.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { sha256Hex } from '../../src/shared/canonical-json.js';
import { symbiBin } from '../support/server-entry.js';

// Journals written by the writer verify with three independent Ed25519
// implementations (Node.js crypto, tweetnacl, the openssl command line) on the
// exact payload bytes cut from each line, and with `symbi audit inspect`.

const nacl = createRequire(import.meta.url)('tweetnacl') as {
  sign: { detached: { verify(m: Uint8Array, s: Uint8Array, k: Uint8Array): boolean } };
};
const bin = symbiBin;
const AGENT = responsePrincipal('declared');

function cut(line: Buffer): { payload: Buffer; signature: Buffer } {
  const prefix = Buffer.from('{"payload":');
  assert.ok(line.subarray(0, prefix.length).equals(prefix), 'line begins with {"payload":');
  const key = line.lastIndexOf(Buffer.from(',"signature":"'));
  const sig = line.subarray(key + 14, line.length - 2).toString('ascii');
  assert.equal(line.subarray(line.length - 2).toString(), '"}');
  return { payload: line.subarray(prefix.length, key), signature: Buffer.from(sig, 'base64') };
}

function splitLines(bytes: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (let end = bytes.indexOf(10, start); end !== -1; end = bytes.indexOf(10, start)) {
    lines.push(bytes.subarray(start, end));
    start = end + 1;
  }
  assert.equal(start, bytes.length, 'the journal ends with a newline');
  return lines;
}

async function writeRun(project: PinnedDirectory, terminal: 'Completed' | { Error: { message: string } } | null) {
  const storage = openAuditStorage(project);
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append({
    Started: {
      execution_context: {
        agent_definition: {
          name: 'declared',
          source_hash: sha256Hex('"source"'),
          declaration_hash: sha256Hex('"decl"'),
          mode: 'text_response',
          surface: 'mcp-server',
          tools_enabled: false,
        },
      },
    },
  });
  await writer.append({
    DirectInferenceRequested: {
      call_id: 'call-1',
      operation: 'mcp-server',
      provider: 'synthetic',
      model: 'm-1',
      request_hash: sha256Hex('req'),
      request_bytes: 120,
      recipient: AGENT,
      recipient_definition_hash: sha256Hex('"source"'),
    },
  });
  await writer.append({ DirectInferenceResponseReceived: { call_id: 'call-1', response_hash: sha256Hex('r'), response_bytes: 40 } });
  await writer.append({
    DirectInferenceFinished: {
      call_id: 'call-1',
      reason: 'Completed',
      response_hash: sha256Hex('r'),
      response_bytes: 40,
      finish_reason: 'stop',
      usage: { input_tokens: 3, output_tokens: 5 },
    },
  });
  await writer.append({
    PolicyEvaluated: { action: 'respond', decision: 'allow', determining_policies: ['p0'], errors: [], denied_count: 0, response_hash: sha256Hex('r') },
  });
  if (terminal !== null) await writer.appendTerminal(terminal);
  await writer.close();
  closeAuditStorage(storage);
  return { runId, file: writer.path, publicKey: storage.signingKey.publicKeyHex };
}

function inspectCli(file: string, runId: string, key: string, extra: string[] = []) {
  const r = spawnSync(process.execPath, [bin, 'audit', 'inspect', file, '--run-id', runId, '--public-key', key, ...extra], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, report: JSON.parse(r.stdout), stderr: r.stderr };
}

test('journal round trip: Node.js crypto, tweetnacl, openssl and symbi audit inspect all verify', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-rt-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const project = pinProject(dir);
  const { runId, file, publicKey } = await writeRun(project, 'Completed');

  assert.equal(file, path.join(fs.realpathSync(dir), '.symbiont', 'governed', `${AGENT}.${runId}.jsonl`));
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  const keyFile = path.join(dir, '.symbiont', 'governed', 'audit-signing.key');
  const seed = fs.readFileSync(keyFile);
  assert.equal(seed.length, 32);
  assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
  assert.match(publicKey, /^[0-9a-f]{64}$/);

  const bytes = fs.readFileSync(file);
  const lines = splitLines(bytes);
  assert.equal(lines.length, 6);
  const rawKey = Buffer.from(publicKey, 'hex');
  const nodeKey = crypto.createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), rawKey]), format: 'der', type: 'spki' });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-openssl-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const pubDer = path.join(work, 'pub.der');
  fs.writeFileSync(pubDer, Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), rawKey]));

  let previous = '0'.repeat(64);
  lines.forEach((line, i) => {
    const { payload, signature } = cut(line);
    assert.equal(signature.length, 64);
    assert.ok(crypto.verify(null, payload, nodeKey, signature), `Node.js crypto verifies line ${i + 1}`);
    assert.ok(nacl.sign.detached.verify(payload, signature, rawKey), `tweetnacl verifies line ${i + 1}`);
    const payloadFile = path.join(work, `payload-${i}.bin`);
    const sigFile = path.join(work, `sig-${i}.bin`);
    fs.writeFileSync(payloadFile, payload);
    fs.writeFileSync(sigFile, signature);
    const out = execFileSync(
      'openssl',
      ['pkeyutl', '-verify', '-pubin', '-keyform', 'DER', '-inkey', pubDer, '-rawin', '-in', payloadFile, '-sigfile', sigFile],
      {
        encoding: 'utf8',
      },
    );
    assert.match(out, /Signature Verified Successfully/);

    const parsed = JSON.parse(payload.toString('utf8'));
    assert.equal(parsed.version, 2);
    assert.equal(parsed.run_id, runId);
    assert.equal(parsed.previous_hash, previous);
    assert.equal(parsed.entry.sequence, i);
    assert.equal(parsed.entry.agent_id, AGENT);
    assert.equal(parsed.entry.iteration, 1);
    assert.match(parsed.entry.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(Object.keys(parsed.entry.event).length, 1);
    previous = crypto
      .createHash('sha256')
      .update(Buffer.concat([line, Buffer.from('\n')]))
      .digest('hex');
  });

  // openssl must also reject a payload with one byte changed (the check is real).
  const tampered = Buffer.from(cut(lines[0]!).payload);
  const flipped = tampered.length - 3;
  tampered[flipped] = tampered[flipped]! ^ 1;
  fs.writeFileSync(path.join(work, 'bad.bin'), tampered);
  const bad = spawnSync(
    'openssl',
    [
      'pkeyutl',
      '-verify',
      '-pubin',
      '-keyform',
      'DER',
      '-inkey',
      pubDer,
      '-rawin',
      '-in',
      path.join(work, 'bad.bin'),
      '-sigfile',
      path.join(work, 'sig-0.bin'),
    ],
    { encoding: 'utf8' },
  );
  assert.notEqual(bad.status, 0);

  const cli = inspectCli(file, runId, publicKey, ['--cross-check']);
  assert.equal(cli.status, 0, cli.stderr);
  assert.equal(cli.report.verdict, 'complete');
  assert.equal(cli.report.journal_complete, true);
  assert.equal(cli.report.requires_reconciliation, false);
  assert.equal(cli.report.terminal_reason, 'Completed');
  assert.equal(cli.report.records, 6);
  assert.equal(cli.report.verified_records, 6);
  assert.equal(cli.report.verified_bytes, bytes.length);
  assert.equal(cli.report.unverified_tail_bytes, 0);
  assert.equal(cli.report.cross_checked, true);
  assert.equal(cli.report.agent_name, 'declared');
  assert.deepEqual(cli.report.warnings, []);
  // One effects row per provider call, named and classified as Symbiont's inspect names them.
  assert.deepEqual(cli.report.effects, [
    {
      identity: { kind: 'direct_inference', call_id: 'call-1' },
      start_sequence: 1,
      finish_sequence: 3,
      outcome: 'result_recorded',
      details: { operation: 'mcp-server', provider: 'synthetic', model: 'm-1', request_hash: sha256Hex('req') },
    },
  ]);
  assert.equal(fs.readFileSync(file).equals(bytes), true, 'inspect never modifies the journal');
});

test('a terminal error is still a complete journal (exit 0)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-rt-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { runId, file, publicKey } = await writeRun(pinProject(dir), { Error: { message: 'cancelled by the client' } });
  const { report, exitCode } = inspectJournal(file, runId, publicKey, { crossCheck: true });
  assert.equal(exitCode, 0);
  assert.deepEqual(report.terminal_reason, { Error: { message: 'cancelled by the client' } });
  assert.equal(report.journal_complete, true);
});

test('a journal without its terminal record needs reconciliation (exit 2)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-rt-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { runId, file, publicKey } = await writeRun(pinProject(dir), null);
  const cli = inspectCli(file, runId, publicKey);
  assert.equal(cli.status, 2, cli.stderr);
  assert.equal(cli.report.verdict, 'requires_reconciliation');
  assert.equal(cli.report.journal_complete, false);
  assert.equal(cli.report.requires_reconciliation, true);
  assert.equal(cli.report.terminal_reason, null);
  assert.equal(cli.report.records, 5);
});

test('a provider call requested without a recorded finish is reported as unknown (exit 2)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-rt-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT);
  await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
  await writer.append({ DirectInferenceRequested: { call_id: 'lost-call', provider: 'synthetic', model: 'm' } });
  await writer.appendTerminal({ Error: { message: 'process interrupted' } });
  await writer.close();
  const { report, exitCode } = inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex);
  assert.equal(exitCode, 2);
  assert.equal(report.journal_complete, true, 'Started and Terminated, no tail');
  assert.equal(report.requires_reconciliation, true);
  assert.deepEqual(
    report.effects.map((e) => [e.identity.kind === 'direct_inference' ? e.identity.call_id : e.identity.reservation_id, e.outcome, e.finish_sequence]),
    [['lost-call', 'unknown', null]],
  );
  assert.ok(report.warnings.some((w) => w.includes('lost-call')));
});

test('a provider call whose recorded finish is an error or a cancel is unknown: complete, yet exit 2', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-rt-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const finishes: Array<[Record<string, unknown>, 'result_recorded' | 'unknown']> = [
    [{ reason: { Error: { message: 'the caller cancelled the invocation' } }, response_hash: null }, 'unknown'],
    [{ reason: { Error: { message: 'provider request failed: HTTP 500' } }, response_hash: null }, 'unknown'],
    [{ reason: 'Completed', response_hash: null }, 'unknown'],
    [{ reason: 'Completed', response_hash: sha256Hex('r') }, 'result_recorded'],
  ];
  for (const [finish, outcome] of finishes) {
    const runId = crypto.randomUUID();
    const writer = await JournalWriter.create(storage, runId, AGENT);
    await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
    await writer.append({ DirectInferenceRequested: { call_id: 'c1', operation: 'mcp-server', provider: 'synthetic', model: 'm' } });
    await writer.append({ DirectInferenceFinished: { call_id: 'c1', ...finish } });
    await writer.appendTerminal(outcome === 'unknown' ? { Error: { message: 'stopped' } } : 'Completed');
    await writer.close();
    const cli = inspectCli(writer.path, runId, storage.signingKey.publicKeyHex);
    assert.equal(cli.status, outcome === 'unknown' ? 2 : 0, JSON.stringify(finish));
    assert.equal(cli.report.journal_complete, true);
    assert.equal(cli.report.requires_reconciliation, outcome === 'unknown');
    assert.equal(cli.report.effects[0].outcome, outcome);
    assert.equal(cli.report.effects[0].finish_sequence, 2);
  }
});

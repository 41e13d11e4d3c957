import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { publicKeyHexProblem } from '../../src/shared/signing/signing-key.js';
import { craftJournal, runEvents, seedKey, type Signer } from '../support/crafted-journal.js';
import { symbiBin } from '../support/server-entry.js';

// `symbi audit inspect` on journals crafted byte by byte and signed with a
// key of the test's own (Node.js crypto, independent of the verifier): a
// validly signed record must still have one meaning for every reader, and a
// public key must be a key no honest signer could fail to hold. Each crafted
// journal's verdict comes from the verifier the command runs (inspectJournal)
// and each key's from the check it makes first (publicKeyHexProblem), called in
// this process; the command itself (its exit status, its JSON report on
// standard output, one line on standard error) runs as a process for a journal
// that verifies, one that is refused and a key that is refused.

const RUN = '5d0b3c8e-8f55-4f1e-9a51-3f1d2c7b9a10';
const { sign: signWithKey, publicKeyHex: KEY } = seedKey(crypto.randomBytes(32));
const RUN_EVENTS = runEvents();
const journalBytes = (events: readonly string[], rewrite?: (payload: string, index: number) => string, sign: Signer = signWithKey): Buffer =>
  craftJournal(RUN, events, sign, rewrite);

function inspectBytes(t: { after(fn: () => void): void }, bytes: Buffer, key = KEY, extra: string[] = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-one-meaning-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, `${RUN}.jsonl`);
  fs.writeFileSync(file, bytes);
  const r = spawnSync(process.execPath, [symbiBin, 'audit', 'inspect', file, '--run-id', RUN, '--public-key', key, ...extra], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.signal, null, 'inspect finished by itself');
  return r;
}

/** `symbi audit inspect JOURNAL --run-id RUN --public-key KEY [--cross-check]` on `bytes`, in this process: its exit status and report, as JSON. */
function inspectInProcess(t: { after(fn: () => void): void }, bytes: Buffer, key = KEY, crossCheck = false) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-one-meaning-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, `${RUN}.jsonl`);
  fs.writeFileSync(file, bytes);
  const { exitCode, report } = inspectJournal(file, RUN, key, { crossCheck });
  return {
    status: exitCode,
    report: JSON.parse(JSON.stringify(report)) as { verdict: string; records: number; error: { line: number | null; message: string } },
  };
}

/**
 * The journal is refused at `line` for the reason `pattern` matches. The verdict comes from the verifier,
 * in this process; `asProcess` also runs the command, whose report must be that verdict, with one line
 * on standard error besides the cross-check estimate.
 */
function expectRefused(t: { after(fn: () => void): void }, bytes: Buffer, line: number, pattern: RegExp, asProcess = false) {
  const checkReport = (status: number | null, report: { verdict: string; error: { line: number | null; message: string } }, shown: string) => {
    assert.equal(status, 1, shown);
    assert.equal(report.verdict, 'failed');
    assert.equal(report.error.line, line);
    assert.match(report.error.message, pattern);
    assert.match(report.error.message, new RegExp(`^line ${line}: malformed line: `));
    // The command prints it as one line on stderr (`verification failed: MESSAGE`), shown by the process run.
    assert.doesNotMatch(report.error.message, /[\r\n]/);
  };
  const inProcess = inspectInProcess(t, bytes, KEY, true);
  checkReport(inProcess.status, inProcess.report, JSON.stringify(inProcess.report));
  if (!asProcess) return;
  const r = inspectBytes(t, bytes, KEY, ['--cross-check']);
  checkReport(r.status, JSON.parse(r.stdout), `${r.stdout}\n${r.stderr}`);
  const said = r.stderr
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('cross-check: '));
  assert.equal(said.length, 1, `one line on stderr besides the cross-check estimate: ${r.stderr}`);
}

test('a journal crafted exactly as the writer writes it verifies and is complete', (t) => {
  const r = inspectBytes(t, journalBytes(RUN_EVENTS), KEY, ['--cross-check']);
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.equal(JSON.parse(r.stdout).verdict, 'complete');
});

test('a duplicated key is refused at any depth, naming the record and the key', (t) => {
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 1 ? p.replace(`"run_id":"${RUN}"`, `"run_id":"other","run_id":"${RUN}"`) : p)),
    2,
    /duplicate key "run_id"/,
    true,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 0 ? p.replace('"name":"declared"', '"name":"forged","name":"declared"') : p)),
    1,
    /entry\.event\.Started\.execution_context\.agent_definition: duplicate key "name"/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 2 ? p.replace('"sequence":2', '"sequence":2,"sequence":2') : p)),
    3,
    /entry: duplicate key "sequence"/,
  );
});

test('an event or a field the format does not define is refused', (t) => {
  const withEvent = (event: string) => [...RUN_EVENTS.slice(0, 2), event, ...RUN_EVENTS.slice(2)];
  expectRefused(t, journalBytes(withEvent('{"Heartbeat":{}}')), 3, /event "Heartbeat" is not one this journal format defines/);
  expectRefused(t, journalBytes(withEvent('{"__proto__":{"call_id":"c1"}}')), 3, /event "__proto__" is not one/);
  expectRefused(t, journalBytes(withEvent('{"ToolDispatchStarted":{"call_id":"c1"}}')), 3, /event "ToolDispatchStarted" is not one/);
  const events = [...RUN_EVENTS];
  events[1] = events[1]!.replace('"call_id":"c1"', '"call_id":"c1","tools":[]');
  expectRefused(t, journalBytes(events), 2, /entry\.event\.DirectInferenceRequested has a field "tools"/);
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 4 ? p.replace('"iteration":1', '"iteration":1,"note":"x"') : p)),
    5,
    /entry has a field "note"/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 5 ? p.replace('"version":2', '"version":2,"extra":null') : p)),
    6,
    /the payload has a field "extra"/,
  );
  const typed = [...RUN_EVENTS];
  typed[2] = typed[2]!.replace('"response_bytes":10', '"response_bytes":"10"');
  expectRefused(t, journalBytes(typed), 3, /response_bytes is a string, not an integer/);
});

test('a number not written the way the writer writes numbers is refused', (t) => {
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 1 ? p.replace('"sequence":1', '"sequence":1e0') : p)),
    2,
    /entry\.sequence: the number 1e0 is not written as the journal writer writes numbers/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 0 ? p.replace('"sequence":0', '"sequence":0e0') : p)),
    1,
    /the number 0e0/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 2 ? p.replace('"sequence":2', '"sequence":2.000') : p)),
    3,
    /the number 2\.000/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 3 ? p.replace('"iteration":1', '"iteration":1.0') : p)),
    4,
    /entry\.iteration: the number 1\.0/,
  );
  expectRefused(
    t,
    journalBytes(RUN_EVENTS, (p, i) => (i === 3 ? p.replace('"input_tokens":5', '"input_tokens":9007199254740993') : p)),
    4,
    /is above 9007199254740991/,
  );
});

// Ed25519's identity point as the public key: R = identity and S = 0 satisfy
// the verification equation for every message, in OpenSSL and in tweetnacl.
const IDENTITY = `01${'00'.repeat(31)}`;
const forgeWithIdentity: Signer = () => Buffer.concat([Buffer.from(IDENTITY, 'hex'), Buffer.alloc(32)]);

test('a small-order or non-canonical public key is refused before any record is read', (t) => {
  const forged = journalBytes(RUN_EVENTS, undefined, forgeWithIdentity);
  // As a process: the command refuses the key as a usage error, before it looks at --cross-check.
  const r = inspectBytes(t, forged, IDENTITY, ['--cross-check']);
  assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^error: --public-key: the public key is a point of small order/);
  // The command's check on each key (it prints `error: --public-key: PROBLEM` and exits 1), and the
  // verifier's own refusal of the same key with or without the cross-check: nothing read, exit 1.
  const refusedKey = (key: string, problem: RegExp) => {
    assert.match(publicKeyHexProblem(key) ?? '', problem, key);
    for (const crossCheck of [false, true]) {
      const { status, report } = inspectInProcess(t, forged, key, crossCheck);
      assert.equal(status, 1, JSON.stringify(report));
      assert.equal(report.records, 0, 'no record is read');
      assert.equal(report.error.line, null);
      assert.match(report.error.message, problem);
    }
  };
  refusedKey(IDENTITY, /^the public key is a point of small order/);
  // The other small-order points: order 2 (y = p - 1), order 4 (y = 0), order 8.
  for (const key of [`ec${'ff'.repeat(30)}7f`, '00'.repeat(32), '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05']) {
    refusedKey(key, /small order/);
  }
  // y = p + 2 spells the point y = 2 a second way: not canonical.
  refusedKey(`ef${'ff'.repeat(30)}7f`, /not a canonical encoding/);
});

test('a signature whose S is not below the group order is refused, even where tweetnacl would accept it', (t) => {
  const L = 2n ** 252n + 27742317777372353535851937790883648493n;
  const malleable: Signer = (payload) => {
    const signature = signWithKey(payload);
    const s = BigInt(`0x${Buffer.from(signature.subarray(32)).reverse().toString('hex')}`) + L;
    const sBytes = Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse();
    return Buffer.concat([signature.subarray(0, 32), sBytes]);
  };
  const r = inspectInProcess(t, journalBytes(RUN_EVENTS, undefined, malleable), KEY, true);
  assert.equal(r.status, 1);
  assert.match(r.report.error.message, /^line 1: bad signature: the signature is not canonical \(S is not below the group order L\)/);
});

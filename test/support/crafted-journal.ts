import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Journals written byte by byte and signed with Node.js crypto, independent of
// the writer and the verifier under test, so a test can craft exactly the
// record it needs (a duplicate key, a number spelt otherwise, a hostile name).

export const CRAFTED_AGENT = 'dc9dee67-e9d8-5265-af81-80b3f704699e';
const HASH = 'a'.repeat(64);
const TIME = '2026-12-02T00:00:00.000Z';
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export type Signer = (payload: Buffer) => Buffer;

/** An Ed25519 key from a 32-byte seed (the audit-signing.key format): its signer and raw public key in hex. */
export function seedKey(seed: Buffer): { sign: Signer; publicKeyHex: string } {
  const privateKey = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const spki = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { sign: (payload) => crypto.sign(null, payload, privateKey), publicKeyHex: spki.subarray(12).toString('hex') };
}

/** JSON text of a string, as canonical JSON writes it. */
const text = (value: string): string => JSON.stringify(value);

/** The events of a complete run as this server writes them (canonical JSON, keys sorted), with `name` as the agent. */
export function runEvents(name = 'declared', terminalReason = '"Completed"'): string[] {
  return [
    `{"Started":{"execution_context":{"agent_definition":{"declaration_hash":"${HASH}","file":"agents/declared.symbi","mode":"text_response","name":${text(name)},"source_hash":"${HASH}","surface":"mcp-server","tools_enabled":false}}}}`,
    `{"DirectInferenceRequested":{"call_id":"c1","model":"m","operation":"mcp-server","provider":"openai","recipient":"${CRAFTED_AGENT}","recipient_definition_hash":"${HASH}","request_bytes":120,"request_hash":"${HASH}"}}`,
    `{"DirectInferenceResponseReceived":{"call_id":"c1","response_bytes":10,"response_hash":"${HASH}"}}`,
    `{"DirectInferenceFinished":{"call_id":"c1","finish_reason":"complete","provider_finish_reason":"stop","reason":"Completed","response_bytes":10,"response_hash":"${HASH}","usage":{"input_tokens":5,"output_tokens":7}}}`,
    `{"PolicyEvaluated":{"action":"respond","decision":"allow","denied_count":0,"determining_policies":[],"errors":[],"response_bytes":5,"response_hash":"${HASH}"}}`,
    `{"Terminated":{"reason":${terminalReason}}}`,
  ];
}

/** The canonical payload text of record `sequence` of run `runId`. */
export function payloadText(runId: string, sequence: number, previousHash: string, event: string): string {
  return (
    `{"entry":{"agent_id":"${CRAFTED_AGENT}","event":${event},"iteration":1,"sequence":${sequence},"timestamp":"${TIME}"},` +
    `"previous_hash":"${previousHash}","run_id":"${runId}","version":2}`
  );
}

/** A chained, signed journal of `events`; `rewrite` may change a payload's text before it is signed. */
export function craftJournal(runId: string, events: readonly string[], sign: Signer, rewrite: (payload: string, index: number) => string = (p) => p): Buffer {
  const lines: Buffer[] = [];
  let previous = '0'.repeat(64);
  events.forEach((event, index) => {
    const payload = Buffer.from(rewrite(payloadText(runId, index, previous, event), index), 'utf8');
    const line = Buffer.from(`{"payload":${payload.toString('utf8')},"signature":"${sign(payload).toString('base64')}"}\n`, 'utf8');
    lines.push(line);
    previous = crypto.createHash('sha256').update(line).digest('hex');
  });
  return Buffer.concat(lines);
}

/**
 * A temporary project whose private .symbiont/governed/ holds a fresh signing key, removed after the
 * test: where crafted journals go for `symbi audit list`. Returns the folder, the governed folder and
 * the key's signer.
 */
export function craftedProject(t: { after(fn: () => void): void }, prefix: string): { dir: string; governed: string; sign: Signer } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const governed = path.join(dir, '.symbiont', 'governed');
  fs.mkdirSync(governed, { recursive: true, mode: 0o700 });
  fs.chmodSync(path.join(dir, '.symbiont'), 0o700);
  const seed = crypto.randomBytes(32);
  fs.writeFileSync(path.join(governed, 'audit-signing.key'), seed, { mode: 0o600 });
  return { dir, governed, sign: seedKey(seed).sign };
}

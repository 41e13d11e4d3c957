import { ED25519_SIGNATURE_BYTES } from '../signing/signing-key.js';
import { LINE_PREFIX, SIGNATURE_KEY } from './journal-format.js';

// Cuts one journal line (without its newline) into the exact payload bytes
// and the signature. The payload is never re-serialised: the bytes that were
// signed are the bytes between the fixed prefix and the signature key.

export type CutLine = { ok: true; payload: Buffer; signature: Buffer } | { ok: false; problem: string };

const LINE_SUFFIX_CLOSE = Buffer.from('"}', 'utf8');
// Standard base64 of 64 bytes: 86 characters and "==" padding.
const SIGNATURE_BASE64 = /^[A-Za-z0-9+/]{86}==$/;

export function cutRecordLine(line: Buffer): CutLine {
  if (line.length < LINE_PREFIX.length || !line.subarray(0, LINE_PREFIX.length).equals(LINE_PREFIX)) {
    return { ok: false, problem: 'does not begin with {"payload":' };
  }
  if (!line.subarray(line.length - LINE_SUFFIX_CLOSE.length).equals(LINE_SUFFIX_CLOSE)) {
    return { ok: false, problem: 'does not end with the signature field and "}"' };
  }
  // base64 contains no quote, so the last occurrence of the key is the real one even if the payload contains the same text.
  const keyAt = line.lastIndexOf(SIGNATURE_KEY);
  if (keyAt < LINE_PREFIX.length) return { ok: false, problem: 'has no "signature" field after the payload' };
  const sigText = line.subarray(keyAt + SIGNATURE_KEY.length, line.length - LINE_SUFFIX_CLOSE.length).toString('latin1');
  if (!SIGNATURE_BASE64.test(sigText)) {
    return { ok: false, problem: `the signature is not standard base64 of ${ED25519_SIGNATURE_BYTES} bytes` };
  }
  const signature = Buffer.from(sigText, 'base64');
  if (signature.toString('base64') !== sigText) return { ok: false, problem: 'the signature is not canonical base64' };
  return { ok: true, payload: line.subarray(LINE_PREFIX.length, keyAt), signature };
}

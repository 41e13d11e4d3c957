import crypto from 'node:crypto';
import { ed25519PublicKeyProblem } from './ed25519-key-checks.js';

// The project signing key is a raw 32-byte Ed25519 seed (the format the
// Symbiont runtime keeps in audit-signing.key). Node.js crypto only imports
// private keys as PKCS#8, so the seed is wrapped in the fixed DER prefix for an
// Ed25519 PrivateKeyInfo; likewise a raw public key is wrapped in the fixed
// SubjectPublicKeyInfo prefix.

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export const ED25519_SEED_BYTES = 32;
const ED25519_PUBLIC_KEY_BYTES = 32;
export const ED25519_SIGNATURE_BYTES = 64;

export interface ProjectSigningKey {
  /** Raw 32-byte public key as 64 lowercase hex characters (what operators record). */
  publicKeyHex: string;
  /** Ed25519 signature (64 bytes) over exactly `payload`. */
  sign(payload: Uint8Array): Buffer;
}

/** Builds the signing key from its 32-byte seed; the seed itself is not retained outside the KeyObject. */
export function signingKeyFromSeed(seed: Uint8Array): ProjectSigningKey {
  if (seed.length !== ED25519_SEED_BYTES) {
    throw new RangeError(`an Ed25519 seed is ${ED25519_SEED_BYTES} bytes, got ${seed.length}`);
  }
  return importSigningKey(seed);
}

function importSigningKey(seed: Uint8Array): ProjectSigningKey {
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  let privateKey: crypto.KeyObject;
  try {
    privateKey = crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } finally {
    der.fill(0); // the KeyObject keeps its own copy
  }
  const spki = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const rawPublicKey = spki.subarray(spki.length - ED25519_PUBLIC_KEY_BYTES);
  // A seed always yields a key of the prime-order group; checked anyway, as every key is, by the one rule.
  const problem = ed25519PublicKeyProblem(rawPublicKey);
  if (problem !== undefined) throw new RangeError(`the audit signing key is unusable: ${problem}`);
  const publicKeyHex = rawPublicKey.toString('hex');
  return {
    publicKeyHex,
    sign: (payload: Uint8Array) => crypto.sign(null, payload, privateKey),
  };
}

const PUBLIC_KEY_HEX = /^[0-9a-fA-F]{64}$/;

export function isPublicKeyHex(text: string): boolean {
  return PUBLIC_KEY_HEX.test(text);
}

// The answers for the last key asked about. Both depend on the hex alone, and the curve check is
// BigInt arithmetic a run's owner, resuming journals of the project's one key at every cancel, would
// otherwise repeat each time (measured in docs/benchmarks.md, "Cancellation from 64 to 4,096 calls
// in flight").
let lastChecked: { hex: string; problem: string | undefined } | undefined;
let lastImported: { hex: string; key: crypto.KeyObject } | undefined;

/**
 * Why `hex` is not an acceptable Ed25519 public key: not 64 hexadecimal characters, or a key
 * libsodium refuses (ed25519-key-checks.ts). Undefined when it is acceptable. Every public key a
 * person gives (audit inspect, audit list) or the server derives passes through this one check.
 */
export function publicKeyHexProblem(hex: string): string | undefined {
  if (lastChecked?.hex === hex) return lastChecked.problem;
  const problem = isPublicKeyHex(hex)
    ? ed25519PublicKeyProblem(Buffer.from(hex, 'hex'))
    : 'the public key must be 64 hexadecimal characters (the raw 32-byte Ed25519 key)';
  lastChecked = { hex, problem };
  return problem;
}

/** Imports a raw public key given as 64 hex characters; throws a one-line error when it is not acceptable. */
export function publicKeyFromHex(hex: string): crypto.KeyObject {
  if (lastImported?.hex === hex) return lastImported.key;
  const problem = publicKeyHexProblem(hex);
  if (problem !== undefined) throw new RangeError(problem);
  let key: crypto.KeyObject;
  try {
    key = crypto.createPublicKey({
      key: Buffer.concat([SPKI_ED25519_PREFIX, Buffer.from(hex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
  } catch {
    throw new RangeError('the public key is not a usable Ed25519 public key');
  }
  lastImported = { hex, key };
  return key;
}

/** Verifies with Node.js crypto (OpenSSL); never throws. */
export function verifyWithNodeCrypto(publicKey: crypto.KeyObject, payload: Uint8Array, signature: Uint8Array): boolean {
  try {
    return crypto.verify(null, payload, publicKey, signature);
  } catch {
    return false;
  }
}

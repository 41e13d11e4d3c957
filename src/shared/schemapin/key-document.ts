import { createPublicKey, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../canonical-json.js';
import { parseStrictJson, StrictJsonError } from '../text/strict-json.js';
import { SchemaPinCheckError } from './schemapin-errors.js';
import { isRecord } from '../json-value.js';

// The body served at a public_key_url: either a PEM public key or a JSON key
// document ({"public_key_pem": ..., "revoked_keys": ["sha256:<hex>", ...]}, the
// .well-known/schemapin.json form). Only an EC P-256 SubjectPublicKeyInfo is
// accepted; every other thing a misconfigured server might return gets a
// message that says what it was.

export interface PublicKeyDocument {
  key: KeyObject;
  /** "sha256:" + lowercase hex SHA-256 of the key's canonical (uncompressed-point) SPKI DER. */
  fingerprint: string;
  /** Normalized (lowercase) revoked fingerprints listed by the document. */
  revokedKeys: string[];
}

const FINGERPRINT = /^sha256:[0-9a-f]{64}$/;

/** A key fingerprint as SchemaPin writes it: "sha256:" and 64 lowercase hexadecimal digits. */
export function isKeyFingerprint(text: string): boolean {
  return FINGERPRINT.test(text);
}
// More revoked entries than this is not a key document anyone maintains by hand.
const REVOKED_KEYS_MAX = 1024;
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

// The DER prefix of a P-256 SPKI with an uncompressed point (RFC 5480: id-ecPublicKey, prime256v1,
// a 66-byte BIT STRING whose content starts 0x04), followed by the 64 bytes of X and Y.
const P256_UNCOMPRESSED_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d03010703420004', 'hex');
const P256_UNCOMPRESSED_SPKI_LENGTH = P256_UNCOMPRESSED_SPKI_PREFIX.length + 64;

/**
 * The key in its one canonical form: the same P-256 point re-imported from its coordinates, so that
 * a compressed (0x02/0x03) or hybrid (0x06/0x07) SPKI and the uncompressed one are one key object
 * whose SPKI export is the uncompressed form. OpenSSL exports a key in the encoding it was given,
 * so without this one key would have as many fingerprints as encodings (a revoked key listed by its
 * standard fingerprint would verify when served compressed). Throws when the export is not the
 * uncompressed P-256 form, which the caller reports.
 */
function canonicalP256Key(key: KeyObject): KeyObject {
  const canonical = createPublicKey({ key: key.export({ format: 'jwk' }), format: 'jwk' });
  const der = canonical.export({ type: 'spki', format: 'der' });
  if (der.length !== P256_UNCOMPRESSED_SPKI_LENGTH || !der.subarray(0, P256_UNCOMPRESSED_SPKI_PREFIX.length).equals(P256_UNCOMPRESSED_SPKI_PREFIX)) {
    throw new Error('the key does not export as an uncompressed P-256 SubjectPublicKeyInfo');
  }
  return canonical;
}

/** Fingerprint of a key: over its canonical uncompressed SPKI DER, never over the encoding served. */
function spkiFingerprint(key: KeyObject): string {
  return 'sha256:' + sha256Hex(canonicalP256Key(key).export({ type: 'spki', format: 'der' }));
}

export function parseKeyDocument(body: Buffer): PublicKeyDocument {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new SchemaPinCheckError('the key URL returned binary data, not a PEM public key or a JSON key document');
  }
  const trimmed = text.trim();
  if (trimmed.length === 0) throw new SchemaPinCheckError('the key URL returned an empty body; expected a PEM public key or a JSON key document');
  if (trimmed.startsWith('{')) return parseJsonDocument(trimmed);
  if (looksLikeHtml(trimmed)) {
    throw new SchemaPinCheckError('the key URL returned an HTML page (an error or login page?), not a PEM public key or a JSON key document');
  }
  return { ...parsePem(trimmed, 'the key URL body'), revokedKeys: [] };
}

function looksLikeHtml(text: string): boolean {
  return /^<(!doctype|html|head|body|\?xml|!--)/i.test(text) || /<html[\s>]/i.test(text.slice(0, 1024));
}

function parseJsonDocument(text: string): PublicKeyDocument {
  let doc: unknown;
  try {
    // Strict: with two "public_key_pem" keys, readers would disagree on which key the document names.
    doc = parseStrictJson(text);
  } catch (err) {
    if (err instanceof StrictJsonError && err.kind === 'ambiguous') throw new SchemaPinCheckError(`the key document is ambiguous: ${err.message}`);
    throw new SchemaPinCheckError('the key URL returned malformed JSON; expected {"public_key_pem": "...", "revoked_keys": [...]}');
  }
  if (!isRecord(doc)) {
    throw new SchemaPinCheckError('the key document is not a JSON object; expected {"public_key_pem": "..."}');
  }
  const record = doc;
  if (typeof record.public_key_pem !== 'string') {
    throw new SchemaPinCheckError('the key document has no "public_key_pem" string');
  }
  const parsed = parsePem(record.public_key_pem.trim(), "the key document's public_key_pem");
  return { ...parsed, revokedKeys: parseRevoked(record.revoked_keys) };
}

function parseRevoked(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new SchemaPinCheckError('the key document\'s "revoked_keys" is not an array of "sha256:<hex>" fingerprints');
  if (value.length > REVOKED_KEYS_MAX) {
    throw new SchemaPinCheckError(`the key document lists ${value.length} revoked keys; at most ${REVOKED_KEYS_MAX} are accepted`);
  }
  return value.map((entry, i) => {
    const normalized = typeof entry === 'string' ? entry.trim().toLowerCase() : '';
    if (!isKeyFingerprint(normalized)) {
      // A revocation list we cannot read must not be ignored: that would un-revoke keys.
      throw new SchemaPinCheckError(`the key document's revoked_keys[${i}] is not a "sha256:<64 hex digits>" fingerprint`);
    }
    return normalized;
  });
}

function parsePem(text: string, where: string): { key: KeyObject; fingerprint: string } {
  const blocks = [...text.matchAll(PEM_BLOCK)];
  if (blocks.length === 0) {
    throw new SchemaPinCheckError(`${where} is not a PEM public key (no "-----BEGIN PUBLIC KEY-----" block)`);
  }
  const labels = blocks.map((b) => b[1]!);
  if (labels.some((l) => l.includes('PRIVATE KEY'))) {
    throw new SchemaPinCheckError(
      `${where} is a PRIVATE key; publish only the public key, and replace this key pair because its private half has been exposed`,
    );
  }
  if (blocks.length !== 1) throw new SchemaPinCheckError(`${where} holds ${blocks.length} PEM blocks; expected exactly one PUBLIC KEY`);
  if (labels[0] !== 'PUBLIC KEY') {
    const hint = labels[0] === 'RSA PUBLIC KEY' ? ' (an RSA key; SchemaPin keys are ECDSA P-256)' : '';
    throw new SchemaPinCheckError(`${where} is a "${labels[0]}" PEM block${hint}; expected an EC P-256 "PUBLIC KEY" (SPKI)`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: blocks[0]![0], format: 'pem' });
  } catch {
    throw new SchemaPinCheckError(`${where} is a PUBLIC KEY block that does not decode as a public key`);
  }
  if (key.asymmetricKeyType !== 'ec') {
    throw new SchemaPinCheckError(`${where} is an ${String(key.asymmetricKeyType).toUpperCase()} key; SchemaPin keys are ECDSA P-256`);
  }
  // OpenSSL imports an EC key whose point is the point at infinity (encoded as one zero byte), a key
  // no signer can hold; it cannot be exported, and asking Node.js for its curve aborts the process.
  // A key that exports is a point of its curve (import checks that), so it is asked nothing before.
  try {
    key.export({ type: 'spki', format: 'der' });
  } catch {
    throw new SchemaPinCheckError(`${where} is not a usable EC public key (its point is the point at infinity or cannot be encoded)`);
  }
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (curve !== 'prime256v1') {
    throw new SchemaPinCheckError(`${where} is an EC key on curve ${curve ?? 'unknown'}; SchemaPin keys use P-256 (prime256v1)`);
  }
  let canonical: KeyObject;
  try {
    canonical = canonicalP256Key(key);
  } catch {
    throw new SchemaPinCheckError(`${where} is a P-256 key that cannot be put in its canonical uncompressed form`);
  }
  return { key: canonical, fingerprint: spkiFingerprint(canonical) };
}

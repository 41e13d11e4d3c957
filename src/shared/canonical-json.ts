import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

// canonicalize ships CommonJS whose typings claim an ES default export; load it as what it is.
const canonicalize = createRequire(import.meta.url)('canonicalize') as (input: unknown) => string | undefined;

/** RFC 8785 canonical JSON text of a JSON-compatible value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value cannot be expressed as canonical JSON');
  return text;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Lowercase hex SHA-256 of the canonical JSON of `value`, and its byte length. */
export function canonicalHash(value: unknown): { hash: string; bytes: number; text: string } {
  const text = canonicalJson(value);
  return { hash: sha256Hex(text), bytes: Buffer.byteLength(text, 'utf8'), text };
}

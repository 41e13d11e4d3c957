import { canonicalJson, sha256Hex } from '../canonical-json.js';
import { SCHEMA_MAX_BYTES } from '../limits.js';
import { inexactIntegerProblem, parseStrictJson, StrictJsonError } from '../text/strict-json.js';
import { SchemaPinInputError } from './schemapin-errors.js';
import { isRecord } from '../json-value.js';

// Turns the caller's schema text into the exact bytes a SchemaPin signature
// covers: the canonical JSON (RFC 8785) of the schema object without its
// top-level `signature` field. Canonicalising is many-to-one, so before it the
// text must have one meaning: a duplicate key (JSON.parse keeps the last, other
// readers the first) or an integer a double cannot hold exactly (2^53 + 1 reads
// as 2^53) would let one signature verify two different schemas. Both are refused.

// A DER ECDSA P-256 signature is at most 72 bytes (96 base64 characters); this leaves room without inviting megabytes.
const SIGNATURE_MAX_CHARS = 256;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type SignatureSource = 'argument' | 'field';

export interface PreparedSchema {
  /** Canonical JSON text of the schema, `signature` field removed. */
  canonical: string;
  /** Lowercase hex SHA-256 of the canonical UTF-8 bytes. */
  schemaHash: string;
  /** The DER signature bytes, or null when the schema is unsigned. */
  signature: Buffer | null;
  signatureSource: SignatureSource | null;
}

/** Parses and canonicalises `schemaText`; takes the signature from `signatureArgument` or the schema's `signature` field. */
export function prepareSchema(schemaText: string, signatureArgument?: string): PreparedSchema {
  const bytes = Buffer.byteLength(schemaText, 'utf8');
  if (bytes > SCHEMA_MAX_BYTES) {
    throw new SchemaPinInputError(`schema is ${bytes} bytes; the limit is ${SCHEMA_MAX_BYTES} bytes (1 MiB)`);
  }
  let parsed: unknown;
  try {
    parsed = parseStrictJson(schemaText, { checkNumber: inexactIntegerProblem });
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    if (err.kind === 'ambiguous') {
      throw new SchemaPinInputError(`schema refused before canonicalising: ${err.message}; a signed schema must read the same to every JSON reader`);
    }
    throw new SchemaPinInputError(`schema is not valid JSON (${err.message}); expected the tool schema as JSON object text`);
  }
  if (!isRecord(parsed)) {
    throw new SchemaPinInputError(
      'schema must be a JSON object (a tool schema); got ' + (Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`),
    );
  }
  const { signature: fieldValue, ...unsigned } = parsed;
  const hasField = Object.prototype.hasOwnProperty.call(parsed, 'signature');
  if (hasField && typeof fieldValue !== 'string') {
    throw new SchemaPinInputError('the schema\'s top-level "signature" field must be a base64 string');
  }

  let source: SignatureSource | null = null;
  let text: string | undefined;
  if (signatureArgument !== undefined) {
    if (hasField && fieldValue !== signatureArgument) {
      throw new SchemaPinInputError('a signature was given both as an argument and in the schema\'s "signature" field, and they differ; give one');
    }
    source = 'argument';
    text = signatureArgument;
  } else if (hasField) {
    source = 'field';
    text = fieldValue as string;
  }

  let canonical: string;
  try {
    canonical = canonicalJson(unsigned);
  } catch (err) {
    const reason = err instanceof RangeError ? 'it is nested too deeply' : (err as Error).message;
    throw new SchemaPinInputError(`schema cannot be canonicalised (${reason})`);
  }
  return {
    canonical,
    schemaHash: sha256Hex(canonical),
    signature: text === undefined ? null : decodeSignature(text, source!),
    signatureSource: source,
  };
}

function decodeSignature(text: string, source: SignatureSource): Buffer {
  const where = source === 'argument' ? 'signature argument' : 'schema\'s "signature" field';
  const trimmed = text.trim();
  if (trimmed.length === 0) throw new SchemaPinInputError(`the ${where} is empty; expected a base64 DER ECDSA P-256 signature`);
  if (trimmed.length > SIGNATURE_MAX_CHARS) {
    throw new SchemaPinInputError(`the ${where} is ${trimmed.length} characters; a base64 DER ECDSA P-256 signature is at most 96`);
  }
  if (!BASE64.test(trimmed) || trimmed.length % 4 !== 0) {
    throw new SchemaPinInputError(`the ${where} is not standard base64; expected a base64 DER ECDSA P-256 signature`);
  }
  return Buffer.from(trimmed, 'base64');
}

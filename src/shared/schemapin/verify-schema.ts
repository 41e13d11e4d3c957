import type { z } from 'zod';
import type { PinnedDirectory } from '../confinement/index.js';
import { parseKeyDocument } from './key-document.js';
import { fetchKeyBody, parseKeyUrl, type KeyFetchOptions } from './key-fetch.js';
import { pinHostOf } from './pin-host.js';
import { PinStore } from './pin-store.js';
import { prepareSchema } from './schema-document.js';
import { SCHEMAPIN_ALGORITHM, verifySchemaSignature } from './schema-signature.js';
import { SchemaPinCheckError } from './schemapin-errors.js';
import type { verificationReportSchema } from './verification-report-schema.js';

// One SchemaPin verification from caller input to report. Unusable input
// throws SchemaPinInputError; every other failure is a report with
// verified: false and a one-line message, so nothing fails open.

export interface VerifySchemaInput {
  schema: string;
  public_key_url: string;
  signature?: string | undefined;
}

export type SchemaVerificationResult = z.infer<typeof verificationReportSchema>;

export interface VerifySchemaOptions extends KeyFetchOptions {
  /** The project whose .symbiont/schemapin/pins.json holds the trust-on-first-use pins. */
  project: PinnedDirectory;
  now?: () => Date;
}

export async function verifySchema(input: VerifySchemaInput, options: VerifySchemaOptions): Promise<SchemaVerificationResult> {
  const url = parseKeyUrl(input.public_key_url);
  const prepared = prepareSchema(input.schema, input.signature);
  const now = options.now ?? (() => new Date());
  const result: SchemaVerificationResult = {
    verified: false,
    message: '',
    schema_hash: prepared.schemaHash,
    public_key_url: input.public_key_url,
    key_fingerprint: null,
    signature: { algorithm: SCHEMAPIN_ALGORITHM, valid: false },
    pinned: null,
    timestamp: now().toISOString(),
  };
  const failed = (message: string): SchemaVerificationResult => ({ ...result, message });

  if (prepared.signature === null) {
    return failed('not verified: the schema is unsigned (no signature argument and no top-level "signature" field); unsigned schemas are never trusted');
  }
  const host = pinHostOf(url);
  try {
    const body = await fetchKeyBody(url, options);
    const document = parseKeyDocument(body);
    result.key_fingerprint = document.fingerprint;
    result.signature.valid = verifySchemaSignature(prepared.canonical, prepared.signature, document.key);
    if (document.revokedKeys.includes(document.fingerprint)) {
      return failed(`not verified: the key ${document.fingerprint} from ${host} is listed in its key document's revoked_keys`);
    }
    const pin = new PinStore(options.project).check(host, document.fingerprint, result.signature.valid, now());
    if (pin.state === 'mismatch') {
      result.pinned = 'mismatch';
      return failed(
        `not verified: ${host} now serves key ${document.fingerprint}, but key ${pin.pinned.fingerprint} was pinned for it on ${pin.pinned.first_seen}; ` +
          `if the publisher really rotated its key, remove the pin with \`symbi schemapin unpin ${host}\` and verify again`,
      );
    }
    if (pin.state !== 'unpinned') result.pinned = pin.state;
    if (!result.signature.valid) {
      return failed(
        `not verified: the signature does not match this schema under the key ${document.fingerprint} from ${host} (the schema changed after signing, or another key signed it)`,
      );
    }
    const how = pin.state === 'new' ? 'pinned now on first use' : 'matches the pinned key';
    return { ...result, verified: true, message: `verified: schema signed by key ${document.fingerprint} from ${host} (${how})` };
  } catch (err) {
    if (err instanceof SchemaPinCheckError) return failed(`not verified: ${err.message}`);
    throw err;
  }
}

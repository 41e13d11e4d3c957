import { z } from 'zod';

// The verification report's shape, declared once: verify-schema.ts infers its
// result type from this schema, and the verify_schema tool advertises it as
// its outputSchema. Kept apart from the verifier so the server can advertise
// it at startup without loading the fetch and crypto code.

/** The report of one SchemaPin verification, whatever its verdict. */
export const verificationReportSchema = z.object({
  verified: z.boolean(),
  message: z.string(),
  schema_hash: z.string(),
  public_key_url: z.string(),
  key_fingerprint: z.string().nullable(),
  signature: z.object({ algorithm: z.literal('ECDSA_P256'), valid: z.boolean() }),
  pinned: z.enum(['new', 'matched', 'mismatch']).nullable(),
  timestamp: z.string(),
});

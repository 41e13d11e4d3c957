import type { EventFields } from '../../shared/journal/journal-records.js';
export type ProviderErrorKind = 'http' | 'provider' | 'malformed' | 'oversize' | 'network' | 'aborted';

/**
 * What is known about a failed provider call, every field safe to journal: numbers, short
 * identifiers and a digest, never the provider's own words.
 */
export interface ProviderErrorDetails {
  /** The HTTP status, or the numeric code of an error reported inside an HTTP 200 answer. */
  status?: number;
  /** The provider's error type or code, when it is a short identifier (rate_limit_exceeded, overloaded_error). */
  errorType?: string;
  /** The request field the error names (OpenAI's `param`), when it is a short identifier. */
  errorParam?: string;
  /** The provider's request id, when it is a short identifier. */
  requestId?: string;
  /** How long the provider asked us to wait (Retry-After, retry-after-ms), in milliseconds. */
  retryAfterMs?: number;
  /** SHA-256 and size of the error body as read (at most ERROR_BODY_READ_BYTES). */
  body?: { sha256: string; bytes: number };
  /** The connection was reset before any byte of the answer arrived. */
  resetBeforeResponse?: boolean;
  /** The provider's own message, for standard error only: capped, keys redacted, never journaled or returned. */
  providerMessage?: string;
}

/**
 * A provider call that produced no usable response. The message is ours: fixed wording per case,
 * the URL tried (never credentials) and the identifiers above; never provider free text.
 */
/** The failure's fields in its DirectInferenceFinished record (journal-records.ts, PROVIDER_ERROR). */
export type ProviderErrorFields = NonNullable<EventFields<'DirectInferenceFinished'>['error']>;

export class ProviderError extends Error {
  override readonly name = 'ProviderError';

  constructor(
    message: string,
    readonly kind: ProviderErrorKind,
    /** The HTTP status for kind 'http'. */
    readonly status?: number,
    readonly details: ProviderErrorDetails = {},
  ) {
    super(message);
  }

  /** " (type x, request id y)" for standard error, where the operator reconciles with the provider; never for the caller. */
  operatorIdentifiers(): string {
    const parts: string[] = [];
    if (this.details.errorType !== undefined) parts.push(`type ${this.details.errorType}`);
    if (this.details.requestId !== undefined) parts.push(`request id ${this.details.requestId}`);
    return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
  }

  /** The fields a DirectInferenceFinished record keeps about this failure. */
  journalFields(): ProviderErrorFields {
    const d = this.details;
    return {
      kind: this.kind,
      status: d.status ?? this.status ?? null,
      error_type: d.errorType ?? null,
      error_param: d.errorParam ?? null,
      request_id: d.requestId ?? null,
      retry_after_ms: d.retryAfterMs ?? null,
      body_sha256: d.body?.sha256 ?? null,
      body_bytes: d.body?.bytes ?? null,
    };
  }
}

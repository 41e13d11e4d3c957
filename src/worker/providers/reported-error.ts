import type { NormalizedFinish } from '../../shared/provider/finish-vocabulary.js';
import type { ErrorFields } from '../../shared/provider/wire-format.js';
import { ProviderError, type ProviderErrorDetails } from './provider-error.js';
import { identifierSuffix, safeExcerpt } from './provider-http.js';

// An error the provider reports inside a successful HTTP answer: OpenRouter's top-level `{"error": ...}`
// in a 200 and its choice-level `error` with finish_reason "error" (https://openrouter.ai/docs/api-reference/errors),
// Anthropic's `{"type": "error", ...}` body, Google's error body from a gateway that answered 200.
// Described in our words with the identifiers only, read by the wire format's own error-field reader.

export interface AnswerContext {
  /** The URL tried, without credentials. */
  url?: string;
  requestId?: string | null;
  secret?: string;
  /** Where provider-chosen text the operator may want (an unrecognised finish reason) goes: standard error only. */
  operatorNotes?: Pick<string[], 'push'>;
}

/** The ProviderError for an error reported inside an HTTP 200 answer: our words, the identifiers kept for the journal. */
export function reportedError(fields: ErrorFields, where: 'in the answer' | 'while generating the answer', context: AnswerContext = {}): ProviderError {
  const details: ProviderErrorDetails = {};
  if (fields.code !== undefined) details.status = fields.code;
  if (fields.errorType !== undefined) details.errorType = fields.errorType;
  const requestId = context.requestId ?? fields.requestId;
  if (requestId !== undefined && requestId !== null) details.requestId = requestId;
  if (fields.message !== undefined) details.providerMessage = safeExcerpt(fields.message, context.secret ?? '');
  const from = context.url === undefined ? '' : ` from POST ${context.url}`;
  const suffix = identifierSuffix(details);
  const ids = fields.code === undefined ? suffix : suffix === '' ? ` (code ${fields.code})` : ` (code ${fields.code}, ${suffix.slice(2)}`;
  return new ProviderError(`the provider reported an error ${where}${from} although it answered HTTP 200${ids}`, 'provider', undefined, details);
}

/** Puts a finish value the table does not name on standard error (capped, keys removed); the caller and the journal see `unknown`. */
export function noteUnrecognizedFinish(normalized: NormalizedFinish, context: AnswerContext): void {
  if (normalized.unrecognized === undefined) return;
  context.operatorNotes?.push(`unrecognised finish reason "${safeExcerpt(normalized.unrecognized, context.secret ?? '')}", reported to the caller as unknown`);
}

import { ProviderError, type ProviderErrorDetails } from './provider-error.js';
import { errorObjectFields, identifierSuffix, safeExcerpt } from './provider-http.js';

// An error the provider reports inside a successful HTTP answer: OpenRouter's top-level `{"error": ...}`
// in a 200 and its choice-level `error` with finish_reason "error" (https://openrouter.ai/docs/api-reference/errors),
// Anthropic's `{"type": "error", ...}` body. Described in our words with the identifiers only.

export interface AnswerContext {
  /** The URL tried, without credentials. */
  url?: string;
  requestId?: string | null;
  secret?: string;
}

export function reportedError(errorBody: unknown, where: 'in the answer' | 'while generating the answer', context: AnswerContext = {}): ProviderError {
  const fields = errorObjectFields(errorBody);
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

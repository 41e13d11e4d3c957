import type { TokenLimitParameter } from '../../shared/provider/provider-kinds.js';
import { ProviderError } from './provider-error.js';

// Which provider failures are tried again, and after how long. One list, one place.
//
// Transient by the providers' own documentation: 408 (request timeout), 429 (rate limited), 500,
// 502, 503, 504, and Anthropic's 529 (overloaded, https://platform.claude.com/docs/en/api/errors);
// OpenRouter documents 408, 429, 502 and 503 the same way (https://openrouter.ai/docs/api-reference/errors),
// Google 429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE and 504 DEADLINE_EXCEEDED
// (https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes), whose wait comes in the error
// body's RetryInfo rather than a Retry-After header (provider-http.ts reads either).
// A connection reset before any byte of the answer arrived (typically a keep-alive connection the
// server had just closed) never reached the model either. Everything else is final: a 400 sent again
// fails again, and a failure after the answer began may have been billed and acted on.

export const RETRYABLE_HTTP_STATUSES: readonly number[] = [408, 429, 500, 502, 503, 504, 529];

/** Attempts after the first. */
export const MAX_RETRIES = 2;
/** Exponential backoff: the first retry waits up to BACKOFF_BASE_MS, each later one twice as long. */
export const BACKOFF_BASE_MS = 500;
export const BACKOFF_MAX_MS = 8_000;

export type RetryDecision = { retry: true; waitMs: number } | { retry: false; why?: string };

export function isRetryable(error: unknown): error is ProviderError {
  if (!(error instanceof ProviderError)) return false;
  if (error.kind === 'network') return error.details.resetBeforeResponse === true;
  // An error reported inside an HTTP 200 answer came from a model that was already generating: not retried.
  return error.kind === 'http' && error.status !== undefined && RETRYABLE_HTTP_STATUSES.includes(error.status);
}

/** Random jitter in [half, whole] of the backoff step, so many clients do not retry in step. */
export function backoffMs(retriesDone: number, random: () => number = Math.random): number {
  const step = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retriesDone);
  return Math.round(step / 2 + (step / 2) * random());
}

/**
 * Whether to try again after `error`, with `retriesDone` retries already made and `msLeft` before the
 * response deadline. A provider's Retry-After is honoured exactly when it fits; when it does not, the
 * answer says how long the provider asked to wait.
 */
export function decideRetry(error: unknown, retriesDone: number, msLeft: number, random?: () => number): RetryDecision {
  if (!isRetryable(error) || retriesDone >= MAX_RETRIES) return { retry: false };
  const asked = error.details.retryAfterMs;
  const waitMs = asked ?? backoffMs(retriesDone, random);
  if (waitMs >= msLeft) {
    const left = formatWait(Math.max(0, msLeft));
    return {
      retry: false,
      why:
        asked !== undefined
          ? `the provider asked to wait ${formatWait(asked)} before retrying, more than the ${left} left before the deadline`
          : `no time is left for a retry before the deadline (${left} left)`,
    };
  }
  return { retry: true, waitMs };
}

export function formatWait(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s` : `${Math.round(ms)} ms`;
}

/**
 * The other name for the output limit, when the endpoint refused the one sent: OpenAI answers HTTP 400
 * with code "unsupported_parameter" and param "max_tokens" when a reasoning model wants
 * max_completion_tokens, and a server that knows only the old name can refuse the new one the same
 * way. The other name is tried once, as a retry; SYMBI_TOKEN_LIMIT_PARAMETER avoids the failed call.
 */
export function otherTokenLimitParameter(error: unknown, sent: TokenLimitParameter): TokenLimitParameter | undefined {
  if (!(error instanceof ProviderError) || error.kind !== 'http' || error.status !== 400) return undefined;
  if (error.details.errorType !== 'unsupported_parameter' || error.details.errorParam !== sent) return undefined;
  return sent === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
}

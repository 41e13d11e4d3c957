import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { FinishReason } from '../../shared/provider/finish-reasons.js';
import { callProvider } from '../../worker/providers/provider-call.js';
import { ProviderError } from '../../worker/providers/provider-error.js';

// `symbi check --online`: one real request to the configured provider, through
// the provider call a run makes (one attempt, no retry), reporting how it went:
// the status of a failure, or the finish reason of an answer. The answer's text
// is dropped unread, and an error is described in our words only.

export interface OnlineOutcome {
  ok: boolean;
  /** The HTTP status of a failed request, when one came; null on success (any 2xx) or without an answer. */
  status: number | null;
  finish_reason: FinishReason | null;
  provider_finish_reason: string | null;
  error: string | null;
}

/** A request any model answers in a word, with no project content in it. */
const PROBE_PROMPT = 'Reply with the single word: ok';
/** The server gives a run two minutes; a probe that waits half of that has its answer. */
const PROBE_TIMEOUT_MS = 60_000;

export async function probeProvider(config: ProviderConfig, timeoutMs = PROBE_TIMEOUT_MS): Promise<OnlineOutcome> {
  try {
    const response = await callProvider(
      config,
      { conversation: [{ role: 'user', content: PROBE_PROMPT }], options: { provider: config.kind, model: config.model, max_tokens: config.maxOutputTokens } },
      AbortSignal.timeout(timeoutMs),
    );
    return { ok: true, status: null, finish_reason: response.finish_reason, provider_finish_reason: response.provider_finish_reason, error: null };
  } catch (error) {
    if (error instanceof ProviderError) {
      return {
        ok: false,
        status: error.details.status ?? error.status ?? null,
        finish_reason: null,
        provider_finish_reason: null,
        error: `the request failed: ${error.message}`,
      };
    }
    return { ok: false, status: null, finish_reason: null, provider_finish_reason: null, error: 'the request failed for an unexpected reason' };
  }
}

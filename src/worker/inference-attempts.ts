import { delay } from 'abort-controller-x';
import type { ProviderConfig } from '../shared/provider/provider-config.js';
import { tokenLimitIsChosen } from '../shared/provider/provider-kinds.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../shared/provider/inference-types.js';
import { callProvider } from './providers/provider-call.js';
import { ProviderError } from './providers/provider-error.js';
import { decideRetry, isRetryable, MAX_RETRIES, otherTokenLimitParameter } from './providers/retry-policy.js';

// The provider call of one run, tried again on a transient failure (retry-policy.ts says which and
// when). Every attempt is the same provider call in the journal, under its one request record
// (Symbiont's writer allows no new request after a failed finish): the run's journal code is told
// when an attempt failed, so the call's finish can list it, and when a retry is about to be sent. A
// successful first attempt costs one function call more than calling the provider directly.

export interface AttemptJournal {
  /** An attempt failed; the call's finish lists it. */
  attemptFailed(failure: ProviderError): void;
  /** After the wait, before the retry is sent (a stopped run throws here). Returns the request to send again. */
  beforeRetry(): TypedInferenceRequest;
  /** A retry is decided, before its wait: the operator hears of it now, not when the run ends. */
  retrying?(retry: { attempt: number; failure: ProviderError; waitMs: number }): void;
  /** Attempt `attempt` is about to be sent (the operator's count of attempts). */
  sending?(attempt: number): void;
  /** A failure that could have been tried again was not: why (the operator's `run.ended`). */
  notRetried?(why: string): void;
}

/** The last attempt's failure, with what the caller should be told about the attempts. */
export class AttemptsFailed extends Error {
  constructor(
    readonly failure: ProviderError,
    readonly attempts: number,
    why: string | undefined,
  ) {
    const tries = attempts > 1 ? ` (after ${attempts} attempts)` : '';
    super(`provider request failed${tries}: ${failure.message}${why === undefined ? '' : `; ${why}`}`);
  }
}

/** Calls the provider, trying transient failures again as retry-policy.ts allows, each attempt journaled through `journal`. */
export async function inferWithRetries(
  configured: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  msLeft: () => number,
  journal: AttemptJournal,
  /** The provider's own error messages, for standard error only, as they come. */
  operatorNotes: Pick<string[], 'push'>,
): Promise<TypedInferenceResponse> {
  let config = configured;
  let attemptRequest = request;
  let limitSwitched = false;
  for (let attempt = 1; ; attempt += 1) {
    journal.sending?.(attempt);
    try {
      return await callProvider(config, attemptRequest, signal, operatorNotes);
    } catch (error) {
      // A stop (cancel or deadline) is the run's to describe; the attempt's finish is recorded with it.
      if (signal.aborted || !(error instanceof ProviderError)) throw error;
      journal.attemptFailed(error);
      const identifiers = error.operatorIdentifiers();
      if (error.details.providerMessage !== undefined || identifiers !== '') {
        operatorNotes.push(
          `attempt ${attempt}${error.status === undefined ? '' : ` HTTP ${error.status}`}${identifiers}: ${error.details.providerMessage ?? '(no message)'}`,
        );
      }
      // Only a wire format whose output-limit field the endpoint chooses has another name to try (wire-format.ts, OutputLimit).
      const otherLimit = !tokenLimitIsChosen(config.kind) || limitSwitched ? undefined : otherTokenLimitParameter(error, config.tokenLimitParameter);
      if (otherLimit !== undefined && attempt - 1 < MAX_RETRIES) {
        operatorNotes.push(
          `the provider refused ${config.tokenLimitParameter}; retrying with ${otherLimit} (set SYMBI_TOKEN_LIMIT_PARAMETER=${otherLimit} to skip the refused call)`,
        );
        config = { ...config, tokenLimitParameter: otherLimit };
        limitSwitched = true;
        journal.retrying?.({ attempt, failure: error, waitMs: 0 });
        attemptRequest = journal.beforeRetry();
        continue;
      }
      const decision = decideRetry(error, attempt - 1, msLeft());
      if (!decision.retry) {
        if (isRetryable(error)) journal.notRetried?.(decision.why ?? `the ${MAX_RETRIES} retries allowed were made`);
        throw new AttemptsFailed(error, attempt, decision.why);
      }
      journal.retrying?.({ attempt, failure: error, waitMs: decision.waitMs });
      // A cancel or the deadline during the wait ends it at once (the delay rejects on abort).
      await delay(signal, decision.waitMs);
      attemptRequest = journal.beforeRetry();
    }
  }
}

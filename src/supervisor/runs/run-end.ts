import type { InvokeOutcome, RunEnd } from '../../shared/worker-protocol.js';
import type { LogLevel } from '../operator/operator-log.js';
import type { CancelSource } from './run-owners.js';

// A run's end as the operator reads it (docs/running.md, "Events"): the worker says why a run
// ended as a typed value (RunEnd); its words, its outcome and its level are decided here only.

/** The run's end, or what the supervisor knows when the run's thread could not say. */
export function runEndOf(outcome: InvokeOutcome): RunEnd {
  return outcome.end ?? { kind: outcome.ok ? 'completed' : outcome.cancelled ? 'cancelled' : 'worker_failed' };
}

/** The `reason` word of `run.ended` and the summary: `finish_<reason>`, `provider_http_<status>`, `provider_<kind>`, else the kind. */
export function runEndReason(end: RunEnd): string {
  switch (end.kind) {
    case 'finish_withheld':
      return `finish_${end.finish}`;
    case 'provider_failed':
      return end.failure === 'http' && end.status !== undefined ? `provider_http_${end.status}` : `provider_${end.failure}`;
    default:
      return end.kind;
  }
}

/** The `outcome` of `run.ended`: `completed`, `cancelled`, `denied` (Cedar said no) or `error`. */
export function runEndOutcome(outcome: InvokeOutcome, end: RunEnd): 'completed' | 'cancelled' | 'denied' | 'error' {
  return outcome.ok ? 'completed' : outcome.cancelled ? 'cancelled' : end.kind === 'policy_denied' ? 'denied' : 'error';
}

/**
 * The level of a run's `run.ended`: `info` when text was released or the client cancelled; `warn`
 * when the server withheld the answer as it should (a deny, a tool call, an incomplete or oversized
 * answer, the key in it) or its shutdown stopped the run; `error` when the provider or the server
 * failed (an HTTP error, the network, the deadline, the journal, the thread).
 */
export function runEndLevel(ok: boolean, end: RunEnd, cancelledBy: CancelSource | undefined): LogLevel {
  if (ok) return 'info';
  switch (end.kind) {
    case 'cancelled':
      return cancelledBy === 'shutdown' ? 'warn' : 'info';
    case 'policy_denied':
    case 'tool_call_withheld':
    case 'finish_withheld':
    case 'empty_answer':
    case 'provider_key_in_answer':
    case 'request_too_large':
    case 'response_too_large':
      return 'warn';
    default:
      return 'error';
  }
}

import { isRecord } from '../json-value.js';
import type { TerminalReason } from './journal-format.js';

// How a run ended, read from its verified records the way an auditor asks it: permitted; denied by
// Cedar and by which policies; withheld by this server's finish rule, for a tool call or for the
// provider's finish; a provider failure; cancelled; past its deadline or its token budget; another
// error; or not ended at all. `audit inspect` reports it and `audit list` shows it, so neither has to
// be read off the raw PolicyEvaluated and Terminated records (docs/audit.md, "How a run ended").

export type RunEndingKind =
  | 'permitted'
  | 'denied'
  | 'withheld_tool_call'
  | 'withheld_finish'
  | 'provider_failed'
  | 'cancelled'
  | 'deadline'
  | 'over_budget'
  | 'error'
  | 'incomplete'
  | 'other';

export interface RunEnding {
  kind: RunEndingKind;
  /** The step's decision as PolicyEvaluated signed it ("allow", "deny"), when the run reached it. */
  decision?: string;
  /** Who denied it: "cedar" or "finish_rule" (PolicyEvaluated.denied_by). */
  denied_by?: string;
  /** The Cedar policies that decided (PolicyEvaluated.determining_policies). */
  policies?: string[];
  /** The provider's own finish reason of the last call, when one finished. */
  provider_finish_reason?: string;
  /** The terminal record's own words, for an error or a reason without a kind of its own. */
  message?: string;
}

/** Symbiont's words for a failed provider call and for a cancel (docs/audit.md cites them). */
const INFERENCE_FAILED = 'Inference failed: ';
const CANCELLED = 'agent execution cancelled';

const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined);

/** Follows the records of one journal as they verify, and says how its run ended. */
export class RunEndingReader {
  private decision: string | undefined;
  private deniedBy: string | undefined;
  private policies: string[] | undefined;
  private deniedToolCall = false;
  private finishReason: string | undefined;

  /** One verified record (its event's name and fields). */
  observe(name: string, fields: Record<string, unknown>): void {
    if (name === 'DirectInferenceFinished' && typeof fields.provider_finish_reason === 'string') this.finishReason = fields.provider_finish_reason;
    if (name !== 'PolicyEvaluated') return;
    if (typeof fields.decision === 'string') this.decision = fields.decision;
    if (typeof fields.denied_by === 'string') this.deniedBy = fields.denied_by;
    this.policies = strings(fields.determining_policies) ?? this.policies;
    const denied = Array.isArray(fields.denied_calls) ? fields.denied_calls : [];
    this.deniedToolCall = denied.some((call) => isRecord(call) && isRecord(call.action) && 'ToolCall' in call.action);
  }

  /** The ending, given the terminal reason the records signed (null without a Terminated record). */
  ending(terminal: TerminalReason | null): RunEnding {
    const facts: Omit<RunEnding, 'kind'> = {
      ...(this.decision !== undefined ? { decision: this.decision } : {}),
      ...(this.deniedBy !== undefined ? { denied_by: this.deniedBy } : {}),
      ...(this.policies !== undefined ? { policies: this.policies } : {}),
      ...(this.finishReason !== undefined ? { provider_finish_reason: this.finishReason } : {}),
    };
    if (terminal === null) return { kind: 'incomplete', ...facts };
    if (terminal === 'Completed') return { kind: 'permitted', ...facts };
    if (terminal === 'Timeout') return { kind: 'deadline', ...facts };
    if (terminal === 'MaxTokens') return { kind: 'over_budget', ...facts };
    // A denied step: Symbiont's route ends it MaxIterations; who denied it says why.
    if (terminal === 'MaxIterations' && this.decision === 'deny') {
      if (this.deniedBy === 'cedar') return { kind: 'denied', ...facts };
      if (this.deniedBy === 'finish_rule') return { kind: this.deniedToolCall ? 'withheld_tool_call' : 'withheld_finish', ...facts };
    }
    if (typeof terminal === 'string') return { kind: 'other', ...facts, message: terminal };
    if ('PolicyDenial' in terminal) return { kind: 'denied', ...facts, message: terminal.PolicyDenial.reason };
    const message = terminal.Error.message;
    if (message === CANCELLED) return { kind: 'cancelled', ...facts, message };
    if (message.startsWith(INFERENCE_FAILED)) return { kind: 'provider_failed', ...facts, message: message.slice(INFERENCE_FAILED.length) };
    return { kind: 'error', ...facts, message };
  }
}

/** The ending in a few words, for `audit list`'s OUTCOME column. */
export function describeRunEnding(ending: RunEnding): string {
  switch (ending.kind) {
    case 'permitted':
      return 'permitted';
    case 'denied':
      return ending.policies !== undefined && ending.policies.length > 0
        ? `denied by ${ending.policies.join(', ')}`
        : `denied${ending.message !== undefined ? `: ${ending.message}` : ''}`;
    case 'withheld_tool_call':
      return 'withheld: a tool call';
    case 'withheld_finish':
      return `withheld: finish ${ending.provider_finish_reason ?? 'unknown'}`;
    case 'provider_failed':
      return `provider failure: ${ending.message ?? ''}`;
    case 'cancelled':
      return 'cancelled';
    case 'deadline':
      return 'deadline passed (Timeout)';
    case 'over_budget':
      return 'over the token budget (MaxTokens)';
    case 'error':
      return `error: ${ending.message ?? ''}`;
    case 'incomplete':
      return 'incomplete (no Terminated record)';
    case 'other':
      return ending.message ?? 'other';
  }
}

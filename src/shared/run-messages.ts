import type { MessagePort } from 'node:worker_threads';
import type { LoadedPolicySet } from './policy/policy-set.js';
import type { ProviderConfig } from './provider-config.js';

// Everything that crosses the supervisor/worker thread boundary for one run.

/** Data every worker thread receives once, at pool creation (the startup snapshot's share). */
export interface WorkerBootData {
  projectFd: number;
  projectPath: string;
  /** Loaded policy set (plain data), evaluated inside each worker with its own Cedar instance. */
  policySet: LoadedPolicySet;
  provider: ProviderConfig;
}

/** The selected definition as the worker needs it. */
export interface RunDefinition {
  stem: string;
  file: string;
  declaredName: string;
  principal: string;
  sourceHash: string;
  declarationText: string;
  declarationHash: string;
  capabilities: string[];
  timeoutMs: number;
}

export interface InvokeTask {
  runId: string;
  definition: RunDefinition;
  prompt: string;
  systemPrompt?: string;
  /** The generated AGENTS.md section, already cut to its limit, if any. */
  guidance?: string;
  /** Whether the caller asked for progress notifications (the worker then posts each phase). */
  reportProgress: boolean;
  /** Supervisor-side port: cancel requests arrive here; progress and terminal notices leave here. */
  port: MessagePort;
}

export type RunPhase = 'journal_opened' | 'request_sent' | 'response_received' | 'policy_evaluated';

export const RUN_PHASES: readonly RunPhase[] = ['journal_opened', 'request_sent', 'response_received', 'policy_evaluated'];

/** Supervisor -> worker. */
export interface CancelMessage {
  type: 'cancel';
  reason: string;
}

/** Worker -> supervisor. */
export type WorkerNotice =
  | { type: 'progress'; phase: RunPhase }
  | { type: 'journal'; path: string; publicKey: string };

export interface AuditReference {
  run_id: string;
  path: string;
  public_key: string;
}

/** When the terminal record became durable: epoch milliseconds with sub-millisecond precision (comparable across threads). */
export type DurableAt = number;

/**
 * `providerNotes`: the provider's own error messages (capped, keys redacted), for standard error only;
 * they never reach the MCP result or the journal.
 */
export type InvokeOutcome =
  | { ok: true; text: string; audit: AuditReference; terminalDurableAt: DurableAt; providerNotes?: string[] }
  | {
      ok: false;
      message: string;
      audit?: AuditReference;
      terminalDurable: boolean;
      terminalDurableAt?: DurableAt;
      cancelled: boolean;
      providerNotes?: string[];
    };

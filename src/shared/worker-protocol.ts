import type { MessagePort } from 'node:worker_threads';
import type { RouteName } from './confinement/index.js';
import type { KeyFileAtStartup } from './storage/signing-key-change.js';
import type { LoadedPolicySet } from './policy/policy-set.js';
import type { ProviderConfig } from './provider/provider-config.js';
import type { FinishReason } from './provider/finish-reasons.js';

// Everything that crosses the supervisor/worker thread boundary for one run.

/** Data every worker thread receives once, at pool creation (the startup snapshot's share). */
/** A worker thread beyond the first is ended after this long without a run (invocation-pool.ts). */
export const WORKER_IDLE_TIMEOUT_MS = 60_000;

export interface WorkerBootData {
  projectFd: number;
  projectPath: string;
  /** The confinement route the supervisor proved at startup (confinement/route-choice.ts); workers use the same one. */
  confinementRoute: RouteName;
  /** Loaded policy set (plain data), evaluated inside each worker with its own Cedar instance. */
  policySet: LoadedPolicySet;
  provider: ProviderConfig;
  /**
   * The raw Ed25519 seed of the key announced at startup. A KeyObject cannot be
   * posted to a thread, so the 32 bytes travel once per thread, here; the
   * worker builds its KeyObject at boot and wipes this copy.
   */
  signingKeySeed: Uint8Array;
  /** The key file as it was at startup: each run looks at it before creating its journal (signing-key-change.ts). */
  signingKeyFile: KeyFileAtStartup;
  /** Cedar's wasm, compiled once in the supervisor (cedar-engine.ts), when the policy set needs Cedar. */
  cedarModule?: WebAssembly.Module;
  /** Test-only SYMBI_FAULT_INJECTION mode (see src/worker/fault-injection.ts); workers get no environment. */
  faultInjection?: string;
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
  /** Shared with the run's owner: who writes the journal (journal/journal-handover.ts). */
  handover: SharedArrayBuffer;
}

export type RunPhase = 'journal_opened' | 'request_sent' | 'response_received' | 'policy_evaluated';

export const RUN_PHASES: readonly RunPhase[] = ['journal_opened', 'request_sent', 'response_received', 'policy_evaluated'];

/** Supervisor -> worker. */
export interface CancelMessage {
  type: 'cancel';
  reason: string;
}

/**
 * Worker -> supervisor, while the run goes on. `provider`: something the operator hears at once on
 * standard error, never the caller or the journal: a retry about to happen (`retry`), or the
 * provider's own words (capped, keys redacted) or a note about the call (`message`).
 */
export type WorkerNotice =
  | { type: 'progress'; phase: RunPhase }
  | { type: 'journal'; path: string; publicKey: string }
  | { type: 'provider'; note: ProviderNote }
  /** For the operator's `run.ended`: an attempt's request is being sent; a transient failure is not tried again, and why. */
  | { type: 'attempt'; attempt: number }
  | { type: 'not_retried'; why: string };

export type ProviderNote =
  | { kind: 'retry'; attempt: number; nextAttempt: number; status: number | null; failure: string; waitMs: number }
  | { kind: 'message'; text: string };

/** How a provider call failed: a ProviderError's kind (worker/invocation.ts assigns one here, so the compiler refuses a kind this list lacks). */
export type ProviderFailureKind = 'http' | 'provider' | 'malformed' | 'oversize' | 'network' | 'aborted';

/**
 * Why a run ended, as a value: the supervisor turns it into the operator's words in one place
 * (supervisor/runs/run-end.ts; docs/running.md lists the reasons). `policy_denied` carries the
 * determining policies by @id, else file:line; `finish_withheld` the neutral finish reason of an
 * answer that was not complete; `provider_failed` the failure's kind and, for `http`, its status.
 */
export type RunEnd =
  | { kind: 'completed' }
  | { kind: 'policy_denied'; policies: string[] }
  | { kind: 'tool_call_withheld' }
  | { kind: 'finish_withheld'; finish: FinishReason }
  /** A finished answer with no text and no tool call: Symbiont's no-progress stop. */
  | { kind: 'empty_answer' }
  | { kind: 'provider_key_in_answer' }
  | { kind: 'provider_failed'; failure: ProviderFailureKind; status?: number }
  | { kind: 'usage_exceeded' }
  | { kind: 'cancelled' }
  | { kind: 'deadline' }
  | { kind: 'request_too_large' }
  | { kind: 'response_too_large' }
  | { kind: 'key_file_changed' }
  | { kind: 'journal_failed' }
  | { kind: 'internal_error' }
  | { kind: 'worker_failed' };

export interface AuditReference {
  run_id: string;
  path: string;
  public_key: string;
}

/** When the terminal record became durable: epoch milliseconds with sub-millisecond precision (comparable across threads). */
export type DurableAt = number;

/** `end`: why the run ended, for standard error only (absent when the run's thread could not say). */
export type InvokeOutcome =
  | { ok: true; text: string; audit: AuditReference; terminalDurableAt: DurableAt; end?: RunEnd }
  | {
      ok: false;
      message: string;
      audit?: AuditReference;
      terminalDurable: boolean;
      terminalDurableAt?: DurableAt;
      cancelled: boolean;
      end?: RunEnd;
      /** Set when the run was refused, before any journal, because the key file changed after startup. */
      keyFileChange?: string;
    };

/**
 * Worker -> supervisor, on the pool's own channel (piscina's `message` event):
 * one line a worker thread wrote to its standard output, redirected there so
 * it never reaches the MCP channel, already capped and with the provider key
 * redacted. `suppressed` marks the notice that the thread's budget is spent.
 */
export interface WorkerOutputMessage {
  type: typeof WORKER_OUTPUT_MESSAGE;
  line: string;
  suppressed?: true;
}

export const WORKER_OUTPUT_MESSAGE = 'symbi.worker-output';

export function isWorkerOutput(message: unknown): message is WorkerOutputMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { type?: unknown }).type === WORKER_OUTPUT_MESSAGE &&
    typeof (message as { line?: unknown }).line === 'string'
  );
}

/**
 * What every worker thread receives as its workerData (supervisor/threads/sandboxed-thread.ts): the
 * sandbox's settings, read by the thread's first module (worker/thread-sandbox.ts), and the data
 * its task module works with.
 */
export interface SandboxedThreadData<Task> {
  sandbox: {
    /** Strings never shown, even inside a line the thread wrote to its standard output (the provider key). */
    redact: string[];
  };
  task: Task;
}

/** Posted once by an invocation worker thread when its module has finished loading (invoke-task.ts). */
export const WORKER_BOOTED_MESSAGE = 'symbi.worker-booted';

export interface WorkerBootedMessage {
  type: typeof WORKER_BOOTED_MESSAGE;
  /** The thread's `threadId`, so the pool knows which of its threads are past loading. */
  threadId: number;
}

export function isWorkerBooted(message: unknown): message is WorkerBootedMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === WORKER_BOOTED_MESSAGE;
}

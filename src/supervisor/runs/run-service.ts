import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { CANCELLED_INVOCATIONS_FINISHING_MAX } from '../../shared/limits.js';
import { GOVERNED_COMPONENTS } from '../../shared/storage/audit-storage.js';
import type { AuditReference, InvokeOutcome, ProviderNote } from '../../shared/worker-protocol.js';
import type { OperatorLog } from '../operator/operator-log.js';
import { agentStandings, refusalText, type AgentStanding, type CallRefusal, type InvokeRefusal } from './agent-refusal.js';
import { preflightInvocation, type InvokeArguments, type Preflight, type PreflightInputs } from './invoke-preflight.js';
import { runEndLevel, runEndOf, runEndOutcome, runEndReason } from './run-end.js';
import type { RunOwner, RunOwnerTable } from './run-owners.js';
import { runProgress, type ProgressNotice } from './run-progress.js';
import type { RunStatistics } from './run-statistics.js';
import type { SigningKeyGuard } from './signing-key-guard.js';
import type { AgentSummary } from '../startup/startup-snapshot.js';
import { traceContextOf, type TraceContext } from './trace-context.js';

// The governed run behind invoke_agent, whatever carries the call: admission (capacity, preflight,
// refusal before any journal), the run with its owner (which outlives the request), progress, the
// operator's lines, and a report in plain terms. The MCP tool (tools/invoke-agent-tool.ts) turns the
// report into a tool result; another entry point would call the same invoke().

export interface InvokeAgentSession extends PreflightInputs {
  owners: RunOwnerTable;
  /** The generated AGENTS.md section, already cut to its limit, if the project has one. */
  guidance?: string | undefined;
  log: OperatorLog;
  /** The startup signing key rule's supervisor side (signing-key-guard.ts). */
  signingKey: SigningKeyGuard;
  /** The registry once the startup analysis has run: files it left out cannot be invoked (source-analysis.ts). */
  analysedRegistry(): Promise<PreflightInputs['registry']>;
  /** Parses the file `agent` names in the DSL analysis thread, ahead of preflight (invoke-preflight.ts prepareSelection). */
  prepareSelection(registry: PreflightInputs['registry'], agent: string): Promise<void>;
  /** Invocations in progress at once (running or queued); a call beyond it is refused before any journal. */
  maxInvocations: number;
  /** Counts for the operator's summary (run-statistics.ts), when the command keeps them. */
  statistics?: RunStatistics;
  /** The startup analysis of every source, for naming what can be invoked when a name is unknown. */
  analysedAgents(): Promise<readonly AgentSummary[]>;
}

/** One call as the service sees it, free of any transport. */
export interface InvokeCall {
  /**
   * Aborted when the caller cancels, or when the transport that carried the call closes (the MCP
   * SDK's v2 aborts its handlers then): the run is cancelled, keeps its owner, and still ends its journal.
   */
  signal: AbortSignal;
  /** Sends one progress notice to the caller; absent when the caller asked for none. */
  progress?: (notice: ProgressNotice) => Promise<void>;
  /** The request's `_meta`, for its trace context (trace-context.ts). */
  meta?: Record<string, unknown>;
}

/** How a call ended, in plain terms. */
export type InvokeReport =
  /** Cedar permitted this text and the journal holding it is durable. */
  | { kind: 'answered'; text: string; agentId: string; audit: AuditReference }
  /** Refused before any journal existed: nothing to refer to. */
  | { kind: 'refused'; message: string }
  /** The run ended without an answer; `reason` is run.ended's (policy_denied, finish_length, ...). */
  | { kind: 'failed'; message: string; reason: string; agentId: string; audit: AuditReference };

export interface RunService {
  invoke(args: InvokeArguments, call: InvokeCall): Promise<InvokeReport>;
}

/** A call refused before any journal, worded here. */
function refusedBefore(refusal: InvokeRefusal): InvokeReport {
  return { kind: 'refused', message: refusalText(refusal) };
}

/**
 * Refuses a call while `maxInvocations` calls the clients still wait on are in progress or being
 * admitted, so a flood of calls cannot grow the server without bound. A call holds its place from
 * arrival (while its registry and selection are awaited) until its run is started or refused, so the
 * first calls to arrive are the ones admitted; a call the client cancels gives its place back at
 * once, as the client counts it, even while its run is still being finished. Those runs have their
 * own bound (CANCELLED_INVOCATIONS_FINISHING_MAX). The operator hears once per episode at capacity,
 * and how many were refused.
 */
function capacityGuard(session: InvokeAgentSession): { admit(signal: AbortSignal): CallRefusal | undefined; release(signal: AbortSignal): void } {
  let refusedInEpisode = 0;
  // Calls being admitted that the client has not cancelled.
  let admitting = 0;
  const cancelledWhileAdmitted = new WeakSet<AbortSignal>();
  const onCancel = (event: Event): void => {
    cancelledWhileAdmitted.add(event.target as AbortSignal);
    admitting -= 1;
  };
  const refuse = (refusal: CallRefusal, fields: Record<string, number>): CallRefusal => {
    if (refusedInEpisode === 0) session.log.warn('invoke_agent at capacity: refusing calls until a run finishes', { event: 'invoke.capacity', ...fields });
    refusedInEpisode += 1;
    session.statistics?.refused('at_capacity');
    return refusal;
  };
  return {
    admit: (signal) => {
      const waitedOn = session.owners.waitedOn + admitting;
      if (waitedOn >= session.maxInvocations) {
        return refuse(
          { kind: 'at_capacity', inProgress: waitedOn, maxInvocations: session.maxInvocations },
          { in_progress: waitedOn, max_invocations: session.maxInvocations },
        );
      }
      if (session.owners.finishing >= CANCELLED_INVOCATIONS_FINISHING_MAX) {
        return refuse(
          { kind: 'cancelled_runs_finishing', finishing: session.owners.finishing, maxFinishing: CANCELLED_INVOCATIONS_FINISHING_MAX },
          { finishing_cancelled: session.owners.finishing, max_finishing_cancelled: CANCELLED_INVOCATIONS_FINISHING_MAX },
        );
      }
      admitting += 1;
      signal.addEventListener('abort', onCancel, { once: true });
      if (refusedInEpisode > 0) {
        session.log.info('invoke_agent below capacity again', { event: 'invoke.capacity', refused_at_capacity: refusedInEpisode });
        refusedInEpisode = 0;
      }
      return undefined;
    },
    /** Gives the place back: the run now counts in the owner table, or the call was refused. */
    release: (signal) => {
      signal.removeEventListener('abort', onCancel);
      if (!cancelledWhileAdmitted.has(signal)) admitting -= 1;
    },
  };
}

/** A retry or the provider's own words, on standard error as they happen (never the caller or the journal). */
function logProviderNote(log: OperatorLog, runId: string, note: ProviderNote): void {
  if (note.kind === 'retry') {
    log.warn(`provider attempt ${note.attempt} failed; attempt ${note.nextAttempt} follows`, {
      event: 'provider.retry',
      run_id: runId,
      attempt: note.attempt,
      status: note.status,
      failure: note.failure,
      wait_ms: note.waitMs,
    });
    return;
  }
  log.warn('provider said', { event: 'provider.message', run_id: runId, detail: note.text });
}

/** A journal's path as the operator finds it from the project folder (the audit reference's is absolute). */
function journalInProject(journalPath: string): string {
  return path.posix.join(...GOVERNED_COMPONENTS, path.basename(journalPath));
}

/**
 * Admission: a place under capacity, the registry and selection awaited, preflight. Either the
 * preflight that lets the run start, or the report of a call refused before any journal.
 */
async function admitCall(
  session: InvokeAgentSession,
  capacity: ReturnType<typeof capacityGuard>,
  args: InvokeArguments,
  signal: AbortSignal,
): Promise<{ ok: true; preflight: Extract<Preflight, { ok: true }> } | { ok: false; report: InvokeReport }> {
  const atCapacity = capacity.admit(signal);
  if (atCapacity !== undefined) return { ok: false, report: refusedBefore(atCapacity) };
  let preflight: Preflight;
  // For an unknown name: what could be invoked instead.
  let registered: readonly AgentStanding[] | undefined;
  try {
    const registry = await session.analysedRegistry();
    await session.prepareSelection(registry, args.agent);
    preflight = preflightInvocation(args, { ...session, registry });
    if (!preflight.ok && preflight.refusal.kind === 'unknown_agent') registered = await agentStandings(session, await session.analysedAgents());
  } finally {
    // Synchronous from here to owners.start, so no other call can take this place meanwhile.
    capacity.release(signal);
  }
  if (!preflight.ok) {
    const reason = refusalText(preflight.refusal, registered);
    session.statistics?.refused('before_inference');
    session.log.info('invoke_agent refused before inference', { event: 'invoke.refused', agent: args.agent, refusal: preflight.refusal.kind, reason });
    return { ok: false, report: { kind: 'refused', message: reason } };
  }
  // Shutdown began while this call was admitted: it is answered, and starts nothing.
  if (session.owners.closed !== undefined) return { ok: false, report: refusedBefore({ kind: 'shutting_down', why: session.owners.closed }) };
  return { ok: true, preflight };
}

/** What the operator hears when a run has ended: a cancel, a Cedar denial, and the one run.ended line. Returns run.ended's reason. */
function logRunEnd(
  session: InvokeAgentSession,
  run: { runId: string; owner: RunOwner; outcome: InvokeOutcome; preflight: Extract<Preflight, { ok: true }>; durationMs: number; trace: TraceContext },
): string {
  const { runId, owner, outcome, durationMs, trace } = run;
  const { definition, provider } = run.preflight;
  const cancelAt = owner.cancelRequestedAt();
  if (cancelAt !== undefined) {
    // Measured to the moment the terminal record's sync returned, in whichever
    // thread wrote it; a terminal record already durable at the cancel counts as 0.
    const durableAt = outcome.terminalDurableAt ?? performance.timeOrigin + performance.now();
    // A cancel that came after the answer was recorded changes nothing: the line says so
    // rather than "cancelled" before a run.ended that says "completed".
    session.log.info(
      outcome.ok
        ? 'cancel requested after the answer was recorded; the answer stands'
        : `run cancelled by the ${owner.cancelledBy() === 'shutdown' ? "server's shutdown" : 'client'}`,
      {
        event: 'run.cancelled',
        run_id: runId,
        by: owner.cancelledBy(),
        terminal_durable: outcome.ok || outcome.terminalDurable,
        cancel_to_terminal_ms: Number(Math.max(0, durableAt - (performance.timeOrigin + cancelAt)).toFixed(1)),
      },
    );
  }
  const end = runEndOf(outcome);
  const reason = runEndReason(end);
  const outcomeName = runEndOutcome(outcome, end);
  if (end.kind === 'policy_denied') {
    session.log.warn('Cedar policy denied the response', {
      event: 'policy.denied',
      run_id: runId,
      agent: definition.declaredName,
      policies: end.policies,
    });
  }
  session.statistics?.runEnded(outcomeName, reason, durationMs);
  const attempts = owner.attemptReport();
  const cancelledBy = outcome.ok ? undefined : owner.cancelledBy();
  // What an operator acts on in one line: why, where the journal is, what was called and how often.
  session.log.write(runEndLevel(outcome.ok, end, cancelledBy), 'run ended', {
    event: 'run.ended',
    run_id: runId,
    agent: definition.declaredName,
    outcome: outcomeName,
    reason,
    ...(end.kind === 'policy_denied' ? { policies: end.policies } : {}),
    ...(end.kind === 'cancelled' && cancelledBy !== undefined ? { cancelled_by: cancelledBy } : {}),
    ...(attempts.notRetried !== undefined ? { not_retried: attempts.notRetried } : {}),
    duration_ms: durationMs,
    journal: outcome.audit === undefined ? null : journalInProject(outcome.audit.path),
    attempts: attempts.attempts,
    provider: provider.kind,
    model: provider.model,
    ...trace,
  });
  if (!outcome.ok && !outcome.terminalDurable && outcome.audit !== undefined) {
    // The server failed to finish its own record: an error, whatever ended the run.
    session.log.error('run ended without a durable terminal record', { event: 'run.unfinalised', run_id: runId });
  }
  return reason;
}

/** The run service of one session: one governed run per admitted call, through the run owner table. */
export function createRunService(session: InvokeAgentSession): RunService {
  const capacity = capacityGuard(session);
  return {
    async invoke(args, call) {
      const admitted = await admitCall(session, capacity, args, call.signal);
      if (!admitted.ok) return admitted.report;
      const { preflight } = admitted;
      const { definition } = preflight;
      const runId = randomUUID();
      const trace = traceContextOf(call.meta);
      const progress = call.progress === undefined ? undefined : runProgress(call.progress);
      const startedAt = performance.now();
      let owner: RunOwner;
      try {
        owner = session.owners.start(
          {
            runId,
            definition,
            prompt: args.prompt,
            reportProgress: progress !== undefined,
            ...(args.system_prompt !== undefined ? { systemPrompt: args.system_prompt } : {}),
            ...(session.guidance !== undefined ? { guidance: session.guidance } : {}),
          },
          {
            onProgress: (phase) => progress?.phase(phase),
            // Said when it happens, not when the run ends.
            onProvider: (note) => logProviderNote(session.log, runId, note),
          },
        );
      } catch (err) {
        await progress?.stop();
        // No worker thread could start (sandboxed-thread.ts): this call is refused with the reason; the server goes on.
        const refusal: InvokeRefusal = { kind: 'no_worker_thread', error: (err as Error).message };
        session.log.warn('invoke_agent refused: no worker thread could start', {
          event: 'invoke.refused',
          agent: args.agent,
          refusal: refusal.kind,
          reason: `no worker thread could start: ${refusal.error}`,
        });
        return refusedBefore(refusal);
      }
      session.log.info('run started', { event: 'run.started', run_id: runId, agent: definition.declaredName, file: definition.file, ...trace });
      session.statistics?.inProgress(session.owners.size);
      const onAbort = (): void => owner.cancel('the caller cancelled the invocation', 'client');
      if (call.signal.aborted) onAbort();
      else call.signal.addEventListener('abort', onAbort, { once: true });

      const outcome = await owner.done;
      session.signingKey.noteOutcome(outcome);
      call.signal.removeEventListener('abort', onAbort);
      // Every progress notice goes out before the result that ends the request.
      await progress?.stop();
      const durationMs = Math.round(performance.now() - startedAt);
      const reason = logRunEnd(session, { runId, owner, outcome, preflight, durationMs, trace });
      if (outcome.ok) return { kind: 'answered', text: outcome.text, agentId: definition.principal, audit: outcome.audit };
      if (outcome.audit === undefined) return { kind: 'refused', message: outcome.message };
      return { kind: 'failed', message: outcome.message, reason, agentId: definition.principal, audit: outcome.audit };
    },
  };
}

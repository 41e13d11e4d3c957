import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AGENT_NAME_MAX_BYTES, CANCELLED_INVOCATIONS_FINISHING_MAX, PROMPT_MAX_BYTES, SYSTEM_PROMPT_MAX_BYTES } from '../../shared/limits.js';
import type { InvokeOutcome, ProviderNote } from '../../shared/worker-protocol.js';
import { runProgress } from '../runs/run-progress.js';
import { preflightInvocation, type Preflight, type PreflightInputs } from '../runs/invoke-preflight.js';
import { agentStandings, refusalText, type AgentStanding, type CallRefusal, type InvokeRefusal } from '../runs/agent-refusal.js';
import type { AgentSummary } from '../startup/startup-snapshot.js';
import { GOVERNED_COMPONENTS } from '../../shared/storage/audit-storage.js';
import type { OperatorLog } from '../operator/operator-log.js';
import type { RunOwner, RunOwnerTable } from '../runs/run-owners.js';
import { declareStringArguments, guarded, sizeWords } from './tool-arguments.js';
import type { RunStatistics } from '../runs/run-statistics.js';
import { runEndLevel, runEndOf, runEndOutcome, runEndReason } from '../runs/run-end.js';
import type { SigningKeyGuard } from '../runs/signing-key-guard.js';
import { traceContextOf } from '../runs/trace-context.js';

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

const TOOL = 'invoke_agent';

// The one declaration of the arguments: the advertised schema and the handler's checks (one-line
// errors, unknown names refused, sizes checked before any journal) both come from it.
const invokeArguments = declareStringArguments(TOOL, {
  agent: {
    description: 'Filename stem of a registered agent, e.g. "assistant" for agents/assistant.symbi',
    required: true,
    allowed: `the filename stem of an agents/*.symbi or *.dsl file (at most ${AGENT_NAME_MAX_BYTES} bytes)`,
    minBytes: 1,
    maxBytes: AGENT_NAME_MAX_BYTES,
  },
  prompt: { description: 'The caller input', required: true, allowed: `a string of at most ${sizeWords(PROMPT_MAX_BYTES)}`, maxBytes: PROMPT_MAX_BYTES },
  system_prompt: {
    description: 'Optional extra caller instructions, sent as a user message after the definition',
    required: false,
    allowed: `a string of at most ${sizeWords(SYSTEM_PROMPT_MAX_BYTES)}`,
    maxBytes: SYSTEM_PROMPT_MAX_BYTES,
  },
});

// The structured result, on success and on errors after the journal opened; both are typed from
// this schema, which is also the advertised outputSchema. It repeats the words of `content` because
// some clients (Claude Code, Codex) show their model structuredContent alone when it is present
// (docs/clients.md).
const invokeAgentOutput = z.object({
  agent_id: z.string().describe('The principal UUID the response was produced under'),
  audit: z
    .object({
      run_id: z.string(),
      path: z.string().describe('Absolute path of the signed journal of this run'),
      public_key: z.string().describe('Hex Ed25519 public key that verifies the journal'),
    })
    .describe('Reference to the signed journal of this invocation'),
  response: z.string().optional().describe('The released answer, the same text as content; present when the call succeeded'),
  error: z
    .object({
      kind: z
        .string()
        .describe('Why the run ended without an answer: policy_denied, tool_call_withheld, finish_<reason>, provider_http_<status>, cancelled, ...'),
      message: z.string().describe('The same words as content'),
    })
    .optional()
    .describe('Present when the call failed (isError): no answer was released'),
});
type InvokeAgentOutput = z.infer<typeof invokeAgentOutput>;

function failure(message: string, agentId?: string, outcome?: InvokeOutcome) {
  const result: { isError: true; content: { type: 'text'; text: string }[]; structuredContent?: InvokeAgentOutput } = {
    isError: true,
    content: [{ type: 'text', text: `invoke_agent refused: ${message}` }],
  };
  if (outcome !== undefined && !outcome.ok && outcome.audit !== undefined && agentId !== undefined) {
    const text = `invoke_agent failed: ${message} (audit: run ${outcome.audit.run_id}, journal ${outcome.audit.path})`;
    result.content = [{ type: 'text', text }];
    result.structuredContent = { agent_id: agentId, audit: outcome.audit, error: { kind: runEndReason(runEndOf(outcome)), message: text } };
  }
  return result;
}

/** A call refused before any journal, worded at this edge. */
function refused(refusal: InvokeRefusal) {
  return failure(refusalText(refusal));
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

/** Registers invoke_agent: preflight, then one governed run per call through the run owner table. */
export function registerInvokeAgentTool(server: McpServer, session: InvokeAgentSession): void {
  const capacity = capacityGuard(session);
  server.registerTool(
    'invoke_agent',
    {
      title: 'Invoke a registered agent (governed text response)',
      description:
        'Sends the registered conversational definition named by `agent` (an agents/*.symbi or *.dsl filename stem) and your prompt to the configured model provider and returns one text answer. ' +
        'The answer is released only after the project Cedar policy permits its exact text and the signed audit journal is durable; structuredContent carries the same answer as `response`, or the failure as `error` {kind, message}, beside agent_id and the audit reference (run_id, journal path, public key). ' +
        'No tools, commands or delegated work are executed. system_prompt is extra caller input sent as a user message; it cannot replace the definition. ' +
        `prompt is limited to ${sizeWords(PROMPT_MAX_BYTES)} and system_prompt to ${sizeWords(SYSTEM_PROMPT_MAX_BYTES)} of UTF-8.`,
      inputSchema: invokeArguments.inputSchema,
      outputSchema: invokeAgentOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    guarded(
      TOOL,
      async (raw: unknown, extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => {
        const args = invokeArguments.read(raw);
        const atCapacity = capacity.admit(extra.signal);
        if (atCapacity !== undefined) return refused(atCapacity);
        let preflight: Preflight;
        // For an unknown name: what could be invoked instead.
        let registered: readonly AgentStanding[] | undefined;
        try {
          const registry = await session.analysedRegistry();
          await session.prepareSelection(registry, args.agent);
          preflight = preflightInvocation(args, { ...session, registry });
          if (!preflight.ok && preflight.refusal.kind === 'unknown_agent') registered = await agentStandings(session, await session.analysedAgents());
        } finally {
          // Synchronous from here to owners.start below, so no other call can take this place meanwhile.
          capacity.release(extra.signal);
        }
        if (!preflight.ok) {
          const reason = refusalText(preflight.refusal, registered);
          session.statistics?.refused('before_inference');
          session.log.info('invoke_agent refused before inference', { event: 'invoke.refused', agent: args.agent, refusal: preflight.refusal.kind, reason });
          return failure(reason);
        }
        // Shutdown began while this call was admitted: it is answered, and starts nothing.
        if (session.owners.closed !== undefined) return refused({ kind: 'shutting_down', why: session.owners.closed });
        const { definition, provider } = preflight;
        const runId = randomUUID();
        const trace = traceContextOf(extra._meta);
        const progressToken = extra._meta?.progressToken;
        const progress =
          progressToken === undefined
            ? undefined
            : runProgress((notice) => extra.sendNotification({ method: 'notifications/progress', params: { progressToken, ...notice } }));
        const startedAt = performance.now();
        let owner: RunOwner;
        try {
          owner = session.owners.start(
            {
              runId,
              definition,
              prompt: args.prompt,
              reportProgress: progressToken !== undefined,
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
          return refused(refusal);
        }
        session.log.info('run started', { event: 'run.started', run_id: runId, agent: definition.declaredName, file: definition.file, ...trace });
        session.statistics?.inProgress(session.owners.size);
        const onAbort = (): void => owner.cancel('the caller cancelled the invocation', 'client');
        if (extra.signal.aborted) onAbort();
        else extra.signal.addEventListener('abort', onAbort, { once: true });

        const outcome = await owner.done;
        session.signingKey.noteOutcome(outcome);
        extra.signal.removeEventListener('abort', onAbort);
        // Every progress notice goes out before the result that ends the request.
        await progress?.stop();
        const durationMs = Math.round(performance.now() - startedAt);
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

        if (outcome.ok) {
          const structuredContent: InvokeAgentOutput = { agent_id: definition.principal, audit: outcome.audit, response: outcome.text };
          return { content: [{ type: 'text' as const, text: outcome.text }], structuredContent };
        }
        if (!outcome.terminalDurable && outcome.audit !== undefined) {
          // The server failed to finish its own record: an error, whatever ended the run.
          session.log.error('run ended without a durable terminal record', { event: 'run.unfinalised', run_id: runId });
        }
        return failure(outcome.message, definition.principal, outcome);
      },
      (err) => session.log.error(`invoke_agent: internal error: ${(err as Error)?.message ?? String(err)}`, { event: 'tool.internal_error' }),
    ),
  );
}

import type { Piscina } from 'piscina';
import { compiledCedarModule } from '../../shared/policy/cedar-engine.js';
import { preparePolicySet } from '../../shared/policy/respond-authorization.js';
import { providerFromEnvironment } from '../../shared/provider/provider-config.js';
import { createInvocationPool, stopInvocationPool } from '../threads/invocation-pool.js';
import { preflightInvocation, prepareSelection } from '../runs/invoke-preflight.js';
import { projectLocationCheck } from '../runs/project-location-check.js';
import { RunOwnerTable } from '../runs/run-owners.js';
import type { SessionContext } from '../startup/session-context.js';
import { createSigningKeyGuard } from '../runs/signing-key-guard.js';
import { recoverTerminalRecord } from '../runs/terminal-recovery.js';
import { finaliseUnstartedRun, loadJournalWriter } from '../runs/unstarted-run-finaliser.js';
import type { InvokeAgentSession } from '../runs/run-service.js';

// Everything invoke_agent needs besides the MCP server: the provider chosen
// from the environment at startup, the worker pool (started once the client has
// initialized, or by the first invocation if that comes sooner), and the run
// owner table that outlives any single MCP request.

/** Invocable agents whose selection and permit verdict are worked out while the session is idle after `initialized`. */
const FIRST_CALLS_PREPARED = 16;

export interface InvokeAgentBackend {
  session: InvokeAgentSession;
  owners: RunOwnerTable;
  /**
   * Starts the worker threads and loads what an early cancel needs, when invocations can run at
   * all (a provider and a signing key): called once the client has initialized, so the session's
   * first invoke_agent does not wait for threads, modules and Cedar to start.
   */
  warmUp(): void;
  stopWorkers(): Promise<void>;
}

/** Builds what invoke_agent needs; `maxInvocations` bounds the runs in progress at once. */
export function createInvokeAgentBackend(context: SessionContext, maxInvocations: number, env: NodeJS.ProcessEnv = process.env): InvokeAgentBackend {
  const { snapshot, log } = context;
  const provider = providerFromEnvironment(env);
  // The key announced at startup is the only key this process signs with (signing-key-change.ts).
  const pinnedKey = context.auditStorage?.pinnedKey;
  let pool: Piscina | undefined;
  const getPool = (): Piscina => {
    if (pool === undefined) {
      if (!provider.ok) throw new Error(provider.message);
      if (pinnedKey === undefined) throw new Error('no audit signing key was loaded at startup');
      pool = createInvocationPool(
        {
          projectFd: snapshot.project.fd,
          projectPath: snapshot.project.path,
          confinementRoute: context.project.route.name,
          policySet: snapshot.policy.set,
          provider: provider.config,
          signingKeySeed: pinnedKey.seed,
          signingKeyFile: { file: pinnedKey.file, shownPath: pinnedKey.shownPath },
          ...(snapshot.policy.set.mode === 'configured' ? { cedarModule: compiledCedarModule() } : {}),
          ...(env.SYMBI_FAULT_INJECTION ? { faultInjection: env.SYMBI_FAULT_INJECTION } : {}),
        },
        log,
      );
    }
    return pool;
  };
  const pinned = () => {
    if (pinnedKey === undefined) throw new Error('no audit signing key was loaded at startup');
    return pinnedKey;
  };
  const owners = new RunOwnerTable(
    getPool,
    async (runId, principal, message) => recoverTerminalRecord(context.project, pinned().key, runId, principal, message),
    async (runId, definition, message) => finaliseUnstartedRun(context.project, pinned(), runId, definition, message),
  );
  const guidance = snapshot.agentsMd.present ? snapshot.agentsMd.guidance?.text : undefined;
  const session: InvokeAgentSession = {
    projectAccess: snapshot.projectAccess,
    projectLocation: projectLocationCheck(snapshot.project.fd, snapshot.project.path, log),
    registry: snapshot.registry,
    policySet: snapshot.policy.set,
    provider,
    owners,
    guidance,
    log,
    signingKey: createSigningKeyGuard(context.auditStorage, snapshot.audit, log),
    analysedRegistry: async () => (await context.sourceAnalysis()).registry,
    prepareSelection: (registry, agent) =>
      prepareSelection(registry, agent, async (entry) => {
        const outcome = await context.dslAnalysis.run({ kind: 'selection', entry });
        return outcome.ok ? outcome.value : { ok: false, refusal: { kind: 'not_conversational', file: entry.file, problem: outcome.message }, candidates: [] };
      }),
    maxInvocations,
    analysedAgents: async () => (await context.sourceAnalysis()).agents,
  };
  // The first call of an agent selects its definition in the DSL analysis thread and works out
  // whether any answer could be permitted; both are kept for the session (invoke-preflight.ts, agent-refusal.ts).
  // Done here for the first few invocable agents, one after the other, right after the startup
  // analysis, while that thread is still up: otherwise the first call also pays for starting it again.
  const prepareFirstCalls = async (): Promise<void> => {
    const analysis = await context.sourceAnalysis();
    const invocable = analysis.agents.filter((agent) => agent.verdict.invocable).slice(0, FIRST_CALLS_PREPARED);
    for (const agent of invocable) {
      await session.prepareSelection(analysis.registry, agent.stem);
      preflightInvocation({ agent: agent.stem, prompt: '' }, { ...session, registry: analysis.registry });
    }
  };
  return {
    owners,
    session,
    warmUp: () => {
      // Nothing to start when every invocation will be refused anyway.
      if (!provider.ok || pinnedKey === undefined) return;
      try {
        getPool();
      } catch {
        // The first invocation meets the same problem and reports it.
      }
      loadJournalWriter().catch(() => undefined);
      // A failure here is the first call's to meet and report.
      prepareFirstCalls().catch(() => undefined);
      // The preflight's partial evaluation, ready before the first call (after the threads are on their way).
      setImmediate(() => preparePolicySet(snapshot.policy.set));
    },
    stopWorkers: async () => {
      if (pool !== undefined) await stopInvocationPool(pool);
    },
  };
}

import { projectFilesUnavailable, type DescriptorAccess } from '../../shared/confinement/index.js';
import { definitionRefusalText, type DefinitionFacts, type DefinitionRefusal } from '../../shared/dsl/conversational-definition.js';
import { canPermitSomeResponse, type PermitPossibility } from '../../shared/policy/respond-authorization.js';
import { respondRequestWithoutResponse } from '../../shared/policy/respond-request.js';
import type { LoadedPolicySet } from '../../shared/policy/policy-set.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import type { AgentSummary } from '../startup/startup-snapshot.js';

// Why invoke_agent refuses a call before any journal, as typed values. What depends only on the
// agent and the startup state is decided by one function, agentRefusal, which invoke_agent,
// list_agents and `symbi check` all ask, so the three cannot disagree. What is the same for every
// agent (the provider, the audit storage) or depends on the moment of the call (capacity, a moved
// project, shutdown) has its own type, decided by invoke_agent alone. refusalText words each one
// for the edges; docs/check.md lists them.

/** Decided by the startup state for one agent name: invoke_agent, list_agents and `symbi check` give the same. */
export type AgentRefusal =
  | { kind: 'project_unavailable'; why: string }
  | DefinitionRefusal
  | { kind: 'policy_denies_every_response'; declaredName: string; why: string };

/** Fixed at startup and the same for every agent: `symbi check` reports them in its provider and storage sections. */
export type SessionRefusal = { kind: 'no_provider'; problem: string } | { kind: 'audit_storage_unusable'; problem: string };

/** Decided when the call arrives: nothing asked beforehand can know them. */
export type CallRefusal =
  | { kind: 'at_capacity'; inProgress: number; maxInvocations: number }
  | { kind: 'cancelled_runs_finishing'; finishing: number; maxFinishing: number }
  | { kind: 'project_moved'; path: string; now: 'gone' | 'another_directory' }
  | { kind: 'shutting_down'; why: string }
  | { kind: 'no_worker_thread'; error: string };

export type InvokeRefusal = AgentRefusal | SessionRefusal | CallRefusal;

/** The kinds of AgentRefusal, as list_agents' output schema and docs/check.schema.json name them. */
export const AGENT_REFUSAL_KINDS = ['project_unavailable', 'unknown_agent', 'ambiguous_agent', 'not_conversational', 'policy_denies_every_response'] as const;
// Fails to compile when the list and the union differ.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const kindsListed: Same<AgentRefusal['kind'], (typeof AGENT_REFUSAL_KINDS)[number]> = true;
void kindsListed;

/** What the conversational check says of a name: from invoke_agent's selection, or from the startup analysis. */
export type DefinitionVerdict = { ok: true; facts: DefinitionFacts } | { ok: false; refusal: DefinitionRefusal };

export interface AgentRefusalInputs {
  /** Whether project files can be read (confinement/route-choice.ts); without it nothing may run. */
  projectAccess: DescriptorAccess;
  policySet: LoadedPolicySet;
}

// Whether any response could be permitted depends only on the policy set and the definition,
// both fixed for the session: it is worked out once per definition object (the selection cache's,
// or the startup analysis's), because a partial evaluation costs a call more than the lookup
// (docs/benchmarks.md).
const permitVerdicts = new WeakMap<DefinitionFacts, { set: LoadedPolicySet; verdict: PermitPossibility }>();

function permitVerdict(set: LoadedPolicySet, facts: DefinitionFacts): PermitPossibility {
  const known = permitVerdicts.get(facts);
  if (known !== undefined && known.set === set) return known.verdict;
  // Before inference the run has no id; partial evaluation treats run_id as unknown anyway.
  const verdict = canPermitSomeResponse(set, respondRequestWithoutResponse(facts, '00000000-0000-0000-0000-000000000000'));
  permitVerdicts.set(facts, { set, verdict });
  return verdict;
}

/**
 * Would invoke_agent refuse this agent whatever the call, and why: no project access, then the
 * conversational check (unknown, ambiguous, not a conversational definition), then a policy set
 * that can permit no response from it. Undefined when it would run.
 */
export function agentRefusal(inputs: AgentRefusalInputs, verdict: DefinitionVerdict): AgentRefusal | undefined {
  // First: without project file access the registry is empty, and "unknown agent" would hide the true reason.
  if (!inputs.projectAccess.available) return { kind: 'project_unavailable', why: inputs.projectAccess.reason };
  if (!verdict.ok) return verdict.refusal;
  const permit = permitVerdict(inputs.policySet, verdict.facts);
  return permit.possible ? undefined : { kind: 'policy_denies_every_response', declaredName: verdict.facts.declaredName, why: permit.reason };
}

/** One analysed agent source and what invoke_agent would answer for its stem: the agent it runs as, or its refusal. */
export type AgentStanding = { summary: AgentSummary; refusal: undefined; declaredName: string } | { summary: AgentSummary; refusal: AgentRefusal };

function standingOf(inputs: AgentRefusalInputs, summary: AgentSummary): AgentStanding {
  const dsl = summary.verdict;
  const refusal = agentRefusal(inputs, dsl.invocable ? { ok: true, facts: dsl.facts } : { ok: false, refusal: dsl.refusal });
  if (refusal !== undefined) return { summary, refusal };
  // agentRefusal lets through only what the conversational check passed.
  return { summary, refusal: undefined, declaredName: dsl.invocable ? dsl.declaredName : summary.stem };
}

/** How long agentStandings works at a stretch before other requests are served. */
const STANDINGS_SLICE_MS = 10;

/**
 * agentRefusal of every agent the startup analysis found: what list_agents, `symbi check` and the
 * startup summary show. A configured policy set is asked once per agent (a partial evaluation each,
 * which for a thousand agents adds up to seconds), so the work yields to the event loop every
 * STANDINGS_SLICE_MS and other requests are served meanwhile; the verdicts are kept for the
 * session (permitVerdict), so later calls cost a lookup per agent.
 */
export async function agentStandings(inputs: AgentRefusalInputs, agents: readonly AgentSummary[]): Promise<AgentStanding[]> {
  const standings: AgentStanding[] = [];
  let sliceStart = performance.now();
  for (const summary of agents) {
    if (performance.now() - sliceStart > STANDINGS_SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    standings.push(standingOf(inputs, summary));
  }
  return standings;
}

const INVOCABLE_SHOWN = 20;
const REFUSED_SHOWN = 5;

/**
 * After "unknown agent": the names invoke_agent would run, then the ones it refuses with their
 * reason, so a caller is never offered a name that fails at the next step. Capped; list_agents has all.
 */
function registeredNames(standings: readonly AgentStanding[]): string {
  if (standings.length === 0) return 'no .symbi or .dsl files were registered at startup';
  const capped = (items: string[], max: number): string =>
    items.slice(0, max).join(', ') + (items.length > max ? ` and ${items.length - max} more (see list_agents)` : '');
  const invocable = standings
    .filter((s) => s.refusal === undefined)
    .map((s) => s.summary.stem)
    .sort();
  // Sources sharing a stem are refused with the same reason; name the stem once.
  const refused = new Map<string, string>();
  for (const s of [...standings].sort((a, b) => (a.summary.stem < b.summary.stem ? -1 : a.summary.stem > b.summary.stem ? 1 : 0))) {
    if (s.refusal !== undefined && !refused.has(s.summary.stem)) refused.set(s.summary.stem, refusalText(s.refusal));
  }
  let text = `invocable: ${invocable.length > 0 ? capped(invocable, INVOCABLE_SHOWN) : 'none'}`;
  if (refused.size > 0)
    text += `; not invocable: ${capped(
      [...refused].map(([stem, reason]) => `${stem} (${reason})`),
      REFUSED_SHOWN,
    )}`;
  return text;
}

/**
 * The one line a refusal is shown as, without the edge's own lead-in ("invoke_agent refused: ",
 * "refused: "). `registered`, for an unknown name, adds what could be invoked instead.
 */
export function refusalText(refusal: InvokeRefusal, registered?: readonly AgentStanding[]): string {
  switch (refusal.kind) {
    case 'project_unavailable':
      return projectFilesUnavailable(refusal.why);
    case 'unknown_agent':
      return registered === undefined ? definitionRefusalText(refusal) : escapeToOneLine(`${definitionRefusalText(refusal)}; ${registeredNames(registered)}`);
    case 'ambiguous_agent':
    case 'not_conversational':
      return definitionRefusalText(refusal);
    case 'policy_denies_every_response':
      return `Cedar policy denies every response from agent \`${refusal.declaredName}\`: ${refusal.why}`;
    case 'no_provider':
      return `no model provider is configured: ${refusal.problem}`;
    case 'audit_storage_unusable':
      return `audit storage was unusable at startup: ${refusal.problem}; restart the server once it is fixed`;
    case 'at_capacity':
      return `the server is at capacity: ${refusal.maxInvocations} invocations are already in progress (the bound set by --max-invocations); retry when one has finished`;
    case 'cancelled_runs_finishing':
      return `the server is at capacity: ${refusal.maxFinishing} cancelled invocations are still writing their terminal records (the bound on cancelled runs being finished); retry in a moment`;
    case 'project_moved':
      return (
        `the project moved: ${escapeToOneLine(refusal.path)} ${refusal.now === 'gone' ? 'no longer exists' : 'is now another directory'}, ` +
        'so an audit reference would not lead to its journal; restart the server in the project folder'
      );
    case 'shutting_down':
      return `${refusal.why}; the call was not started`;
    case 'no_worker_thread':
      return `no worker thread could start: ${refusal.error}; the call was not started`;
  }
}

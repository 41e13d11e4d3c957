import { selectConversationalDefinition, type RegistryEntry, type SelectedDefinition, type Selection } from '../../shared/dsl/conversational-definition.js';
import { canPermitSomeResponse, type PermitPossibility } from '../../shared/policy/respond-authorization.js';
import { respondRequestWithoutResponse } from '../../shared/policy/respond-request.js';
import type { LoadedPolicySet } from '../../shared/policy/policy-set.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { RunDefinition } from '../../shared/worker-protocol.js';
import { type DescriptorAccess, projectFilesUnavailable } from '../../shared/confinement/index.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import type { AgentSummary } from '../startup/startup-snapshot.js';
import type { ProjectLocation } from './project-location-check.js';

// Every refusal here happens before a journal exists, so it carries no audit reference.

export interface PreflightInputs {
  /** Whether project files can be read (confinement/route-choice.ts); without it nothing may run. */
  projectAccess: DescriptorAccess;
  /** Whether the path in audit references still leads to the pinned project (project-location-check.ts). */
  projectLocation: ProjectLocation;
  registry: readonly RegistryEntry[];
  policySet: LoadedPolicySet;
  provider: { ok: true; config: ProviderConfig } | { ok: false; message: string };
}

export interface InvokeArguments {
  agent: string;
  prompt: string;
  system_prompt?: string | undefined;
}

/** `unknownAgent`: no source has the name; unknownAgentMessage says what can be invoked instead. */
export type Preflight = { ok: true; definition: RunDefinition; provider: ProviderConfig } | { ok: false; message: string; unknownAgent?: true };

/** What the startup analysis says of one source, as the unknown-agent refusal uses it. */
export type AgentVerdictSummary = Pick<AgentSummary, 'stem' | 'invocable' | 'reason'>;

const INVOCABLE_SHOWN = 20;
const REFUSED_SHOWN = 5;

/**
 * The refusal for a name no source has: the names invoke_agent would run, then
 * the ones it refuses with their startup reason, so a caller is never offered
 * a name that fails at the next step. One line, capped; list_agents has all.
 */
export function unknownAgentMessage(unknown: string, verdicts: readonly AgentVerdictSummary[]): string {
  if (verdicts.length === 0) return `${unknown}; no .symbi or .dsl files were registered at startup`;
  const capped = (items: string[], max: number): string =>
    items.slice(0, max).join(', ') + (items.length > max ? ` and ${items.length - max} more (see list_agents)` : '');
  const invocable = verdicts.filter((v) => v.invocable).map((v) => v.stem).sort();
  // Sources sharing a stem are refused with the same reason; name the stem once.
  const refused = new Map<string, string>();
  for (const v of [...verdicts].sort((a, b) => (a.stem < b.stem ? -1 : a.stem > b.stem ? 1 : 0))) {
    if (!v.invocable && !refused.has(v.stem)) refused.set(v.stem, v.reason ?? 'not invocable');
  }
  let message = `${unknown}; invocable: ${invocable.length > 0 ? capped(invocable, INVOCABLE_SHOWN) : 'none'}`;
  if (refused.size > 0) message += `; not invocable: ${capped([...refused].map(([stem, reason]) => `${stem} (${reason})`), REFUSED_SHOWN)}`;
  return escapeToOneLine(message);
}

// The registry never changes after startup, so a name's selection (a parse of
// its file and two hashes) is worked out once per name, not once per call.
// Only names of registered files are kept, so the cache holds at most one
// selection per file and unknown names cannot crowd them out.
const SELECTION_CACHE_ENTRIES = 1024;
const selections = new WeakMap<readonly RegistryEntry[], Map<string, Selection>>();

function cacheFor(registry: readonly RegistryEntry[]): Map<string, Selection> {
  let cache = selections.get(registry);
  if (cache === undefined) {
    cache = new Map();
    selections.set(registry, cache);
  }
  return cache;
}

function selectionFor(registry: readonly RegistryEntry[], name: string): Selection {
  const cache = cacheFor(registry);
  let selection = cache.get(name);
  if (selection === undefined) {
    selection = selectConversationalDefinition(registry, name);
    if (cache.size < SELECTION_CACHE_ENTRIES && registry.some((e) => e.stem === name)) cache.set(name, selection);
  }
  return selection;
}

// Whether any response could be permitted depends only on the policy set and the definition,
// both fixed for the session: it is worked out once per definition the selection cache holds,
// because a partial evaluation costs a call more than the lookup (docs/benchmarks.md).
const verdicts = new WeakMap<SelectedDefinition, { set: LoadedPolicySet; verdict: PermitPossibility }>();

function permitVerdict(set: LoadedPolicySet, selected: SelectedDefinition): PermitPossibility {
  const known = verdicts.get(selected);
  if (known !== undefined && known.set === set) return known.verdict;
  // Before inference the run has no id; partial evaluation treats run_id as unknown anyway.
  const verdict = canPermitSomeResponse(set, respondRequestWithoutResponse(selected, '00000000-0000-0000-0000-000000000000'));
  verdicts.set(selected, { set, verdict });
  return verdict;
}

/**
 * Works out the selection of `name` before preflight, when it means exactly
 * one file, with `examine` (the DSL analysis thread) parsing that file instead
 * of this thread. Unknown and ambiguous names parse nothing and are left to preflight.
 */
export async function prepareSelection(registry: readonly RegistryEntry[], name: string, examine: (entry: RegistryEntry) => Promise<Selection>): Promise<void> {
  const cache = cacheFor(registry);
  if (cache.has(name) || cache.size >= SELECTION_CACHE_ENTRIES) return;
  const matches = registry.filter((e) => e.stem === name);
  if (matches.length !== 1) return;
  const selection = await examine(matches[0]!);
  cache.set(name, selection);
}

/**
 * What invoke_agent's preflight says of `name` apart from the provider (which is the same for
 * every agent): `symbi check` and `symbi policy test` ask it, so their verdicts are the
 * server's. `stage` says which step refused: the name's selection, or the policy set.
 */
export type AgentPreflight =
  | { ok: true; definition: SelectedDefinition }
  | { ok: false; stage: 'access' | 'selection' | 'policy'; message: string; unknownAgent?: true };

function selectionStep(name: string, inputs: Omit<PreflightInputs, 'provider' | 'projectLocation'>): AgentPreflight {
  // First: without project file access the registry is empty, and "unknown agent" would hide the true reason.
  if (!inputs.projectAccess.available) return { ok: false, stage: 'access', message: projectFilesUnavailable(inputs.projectAccess.reason) };
  const selection = selectionFor(inputs.registry, name);
  if (!selection.ok) {
    return selection.kind === 'unknown'
      ? { ok: false, stage: 'selection', message: selection.message, unknownAgent: true }
      : { ok: false, stage: 'selection', message: selection.message };
  }
  return { ok: true, definition: selection.definition };
}

function policyStep(set: LoadedPolicySet, selected: SelectedDefinition): string | undefined {
  const verdict = permitVerdict(set, selected);
  return verdict.possible ? undefined : `Cedar policy denies every response from agent \`${selected.declaredName}\`: ${verdict.reason}`;
}

/** The preflight of `name` without the provider step (see AgentPreflight). */
export function agentPreflight(name: string, inputs: Omit<PreflightInputs, 'provider' | 'projectLocation'>): AgentPreflight {
  const selected = selectionStep(name, inputs);
  if (!selected.ok) return selected;
  const refusal = policyStep(inputs.policySet, selected.definition);
  return refusal === undefined ? selected : { ok: false, stage: 'policy', message: refusal };
}

/** Refuses before any journal what cannot run (no project access, a moved project, unknown agent, no provider, a deny-all policy), else the run definition. The argument sizes are checked by the tool's declaration. */
export function preflightInvocation(args: InvokeArguments, inputs: PreflightInputs): Preflight {
  // A run whose audit reference would lead to no journal is not started (no journal, no provider call).
  const moved = inputs.projectAccess.available ? inputs.projectLocation.problem() : undefined;
  if (moved !== undefined) return { ok: false, message: moved };
  const selection = selectionStep(args.agent, inputs);
  if (!selection.ok) return selection.unknownAgent ? { ok: false, message: selection.message, unknownAgent: true } : { ok: false, message: selection.message };
  const selected = selection.definition;

  if (!inputs.provider.ok) return { ok: false, message: `no model provider is configured: ${inputs.provider.message}` };

  const refusal = policyStep(inputs.policySet, selected);
  if (refusal !== undefined) return { ok: false, message: refusal };

  return {
    ok: true,
    provider: inputs.provider.config,
    definition: {
      stem: selected.stem,
      file: selected.file,
      declaredName: selected.declaredName,
      principal: selected.principal,
      sourceHash: selected.sourceHash,
      declarationText: selected.declarationText,
      declarationHash: selected.declarationHash,
      capabilities: selected.capabilities,
      timeoutMs: selected.timeoutMs,
    },
  };
}

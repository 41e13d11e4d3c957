import { selectConversationalDefinition, type RegistryEntry, type SelectedDefinition, type Selection } from '../../shared/dsl/conversational-definition.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { RunDefinition } from '../../shared/worker-protocol.js';
import { agentRefusal, type AgentRefusal, type AgentRefusalInputs, type InvokeRefusal } from './agent-refusal.js';
import type { ProjectLocation } from './project-location-check.js';
import type { SigningKeyGuard } from './signing-key-guard.js';

// Every refusal here happens before a journal exists, so it carries no audit reference.

export interface PreflightInputs extends AgentRefusalInputs {
  /** Whether the path in audit references still leads to the pinned project (project-location-check.ts). */
  projectLocation: ProjectLocation;
  registry: readonly RegistryEntry[];
  provider: { ok: true; config: ProviderConfig } | { ok: false; message: string };
  /** Why no journal can be signed in this session (signing-key-guard.ts), or undefined. */
  signingKey: Pick<SigningKeyGuard, 'unusable'>;
}

export interface InvokeArguments {
  agent: string;
  prompt: string;
  system_prompt?: string | undefined;
}

export type Preflight = { ok: true; definition: RunDefinition; provider: ProviderConfig } | { ok: false; refusal: InvokeRefusal };

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
 * What invoke_agent's preflight says of `name` whatever the call (agent-refusal.ts): `symbi policy test`
 * asks it, so its verdicts are the server's.
 */
export type AgentPreflight = { ok: true; definition: SelectedDefinition } | { ok: false; refusal: AgentRefusal };

/** The preflight of `name` without the session's and the call's own refusals (see AgentPreflight). */
export function agentPreflight(name: string, inputs: AgentRefusalInputs & { registry: readonly RegistryEntry[] }): AgentPreflight {
  const selection = selectionFor(inputs.registry, name);
  const refusal = agentRefusal(inputs, selection.ok ? { ok: true, facts: selection.definition } : { ok: false, refusal: selection.refusal });
  if (refusal !== undefined) return { ok: false, refusal };
  // agentRefusal passes only a selection that succeeded.
  return { ok: true, definition: (selection as Extract<Selection, { ok: true }>).definition };
}

/**
 * Refuses before any journal what cannot run, else the run definition: a moved project (the call's),
 * then the agent's refusal (agent-refusal.ts), then the session's (no provider, no signing key).
 * The argument sizes are checked by the tool's declaration.
 */
export function preflightInvocation(args: InvokeArguments, inputs: PreflightInputs): Preflight {
  // A run whose audit reference would lead to no journal is not started (no journal, no provider call).
  const moved = inputs.projectAccess.available ? inputs.projectLocation.problem() : undefined;
  if (moved !== undefined) return { ok: false, refusal: moved };
  const agent = agentPreflight(args.agent, inputs);
  if (!agent.ok) return agent;
  const selected = agent.definition;
  if (!inputs.provider.ok) return { ok: false, refusal: { kind: 'no_provider', problem: inputs.provider.message } };
  if (inputs.signingKey.unusable !== undefined) return { ok: false, refusal: { kind: 'audit_storage_unusable', problem: inputs.signingKey.unusable } };

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

import { selectConversationalDefinition, type RegistryEntry, type Selection } from '../shared/dsl/conversational-definition.js';
import { canPermitSomeResponse } from '../shared/policy/respond-authorization.js';
import type { LoadedPolicySet } from '../shared/policy/policy-set.js';
import type { ProviderConfig } from '../shared/provider-config.js';
import type { RunDefinition } from '../shared/run-messages.js';
import { projectFilesUnavailable, type DescriptorAccess } from '../shared/descriptor-access-check.js';

// Every refusal here happens before a journal exists, so it carries no audit reference.

export interface PreflightInputs {
  /** Whether project files can be read (descriptor-access-check.ts); without it nothing may run. */
  projectAccess: DescriptorAccess;
  registry: readonly RegistryEntry[];
  policySet: LoadedPolicySet;
  provider: { ok: true; config: ProviderConfig } | { ok: false; message: string };
}

export interface InvokeArguments {
  agent: string;
  prompt: string;
  system_prompt?: string | undefined;
}

export type Preflight = { ok: true; definition: RunDefinition; provider: ProviderConfig } | { ok: false; message: string };

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

/** Refuses before any journal what cannot run (no project access, unknown agent, no provider, a deny-all policy), else the run definition. The argument sizes are checked by the tool's declaration. */
export function preflightInvocation(args: InvokeArguments, inputs: PreflightInputs): Preflight {
  // First: without project file access the registry is empty, and "unknown agent" would hide the true reason.
  if (!inputs.projectAccess.available) return { ok: false, message: projectFilesUnavailable(inputs.projectAccess.reason) };

  const selection = selectionFor(inputs.registry, args.agent);
  if (!selection.ok) return { ok: false, message: selection.message };
  const selected = selection.definition;

  if (!inputs.provider.ok) return { ok: false, message: `no model provider is configured: ${inputs.provider.message}` };

  const verdict = canPermitSomeResponse(inputs.policySet, {
    principal: selected.principal,
    agentName: selected.declaredName,
    capabilities: selected.capabilities,
    context: {
      surface: 'mcp-server',
      mode: 'text_response',
      tools_enabled: false,
      run_id: '00000000-0000-0000-0000-000000000000',
      agent: {
        name: selected.declaredName,
        file: selected.file,
        source_hash: selected.sourceHash,
        declaration_hash: selected.declarationHash,
        capabilities: selected.capabilities,
      },
    },
  });
  if (!verdict.possible) return { ok: false, message: `Cedar policy denies every response from agent \`${selected.declaredName}\`: ${verdict.reason}` };

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

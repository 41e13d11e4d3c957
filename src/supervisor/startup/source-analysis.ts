import type { RegistryEntry } from '../../shared/dsl/conversational-definition.js';
import type { AgentSummary } from '../../shared/dsl/source-summary.js';
import type { SkippedSource } from './agent-discovery.js';
import type { DslAnalysisPool } from '../threads/dsl-analysis-pool.js';
import type { StartupSnapshot } from './startup-snapshot.js';

// The startup analysis of the agent sources: each file is parsed and checked
// in the DSL analysis thread, within the analysis budget. A file that cannot
// be analysed (too complex for the budget, or too large for the thread's
// memory) is left out of the registry, with the reason, as discovery leaves
// out a file it cannot read: list_agents shows it under left_out, and
// invoke_agent does not know its stem.

export interface SourceAnalysis {
  readonly agents: readonly AgentSummary[];
  /** The startup registry without the files left out here. */
  readonly registry: readonly RegistryEntry[];
  /** Discovery's left-out files, then the ones left out here. */
  readonly skipped: readonly SkippedSource[];
}

/** Analyses every registry entry of `snapshot`, one at a time, off the event loop. */
export async function analyseSources(snapshot: StartupSnapshot, pool: DslAnalysisPool): Promise<SourceAnalysis> {
  const byStem = new Map<string, RegistryEntry[]>();
  for (const entry of snapshot.registry) {
    const peers = byStem.get(entry.stem);
    // Only the file names of peers are needed (a shared stem is ambiguous), not their text.
    const peer = { stem: entry.stem, file: entry.file, text: '' };
    if (peers === undefined) byStem.set(entry.stem, [peer]);
    else peers.push(peer);
  }
  const outcomes = await Promise.all(
    snapshot.registry.map((entry) =>
      pool.run({ kind: 'summary', entry: { ...entry, bytes: Buffer.byteLength(entry.text, 'utf8') }, peers: byStem.get(entry.stem)! }),
    ),
  );
  const agents: AgentSummary[] = [];
  const registry: RegistryEntry[] = [];
  const skipped: SkippedSource[] = [...snapshot.skipped];
  outcomes.forEach((outcome, i) => {
    const entry = snapshot.registry[i]!;
    if (outcome.ok) {
      agents.push(outcome.value);
      registry.push(entry);
    } else {
      skipped.push({ file: entry.file, reason: outcome.message });
    }
  });
  return { agents, registry, skipped };
}

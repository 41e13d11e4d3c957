import type { RegistryEntry } from '../../shared/dsl/conversational-definition.js';
import type { AgentSummary } from '../../shared/dsl/source-summary.js';
import type { SkippedSource } from './agent-discovery.js';
import type { AnalysisOutcome, DslAnalysisPool } from '../threads/dsl-analysis-pool.js';
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
  const summarise = (entry: RegistryEntry, peers: RegistryEntry[]): Promise<AnalysisOutcome<AgentSummary>> =>
    pool.run({ kind: 'summary' as const, entry: { ...entry, bytes: Buffer.byteLength(entry.text, 'utf8') }, peers });
  const outcomes = await Promise.all(snapshot.registry.map((entry) => summarise(entry, byStem.get(entry.stem)!)));
  // A file left out here is not in the registry invoke_agent selects from, so a stem it shared is
  // not ambiguous there: the file that stays is analysed again without it, so that list_agents
  // says what invoke_agent does (agent-refusal.ts).
  const leftOut = new Set(snapshot.registry.filter((_, i) => !outcomes[i]!.ok).map((entry) => entry.file));
  for (const [i, outcome] of outcomes.entries()) {
    const entry = snapshot.registry[i]!;
    const peers = byStem.get(entry.stem)!;
    if (outcome.ok && peers.some((peer) => leftOut.has(peer.file))) {
      outcomes[i] = await summarise(
        entry,
        peers.filter((peer) => !leftOut.has(peer.file)),
      );
    }
  }
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

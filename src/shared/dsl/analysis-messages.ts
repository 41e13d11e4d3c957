import type { RegistryEntry, Selection } from './conversational-definition.js';
import type { AgentSummary } from './source-summary.js';

// What crosses between the supervisor and the DSL analysis thread
// (src/supervisor/threads/dsl-analysis-pool.ts, src/worker/dsl-analysis-task.ts).

export type AnalysisJob =
  /** The parse_dsl report of one text, as the JSON text of the answer. */
  | { kind: 'report'; text: string; source: string }
  /** The list_agents summary of one agent source; `peers` share its stem (text left empty). */
  | { kind: 'summary'; entry: RegistryEntry & { bytes: number }; peers: RegistryEntry[] }
  /** invoke_agent's selection of the one registry entry whose stem is the name asked for. */
  | { kind: 'selection'; entry: RegistryEntry };

export type AnalysisValue<J extends AnalysisJob> = J extends { kind: 'report' } ? string : J extends { kind: 'summary' } ? AgentSummary : Selection;

/** A job as posted to the thread, numbered so its answer can be matched. */
export type AnalysisRequest = AnalysisJob & { id: number };

/** What the thread posts once its modules are loaded, before any response. */
export const ANALYSIS_THREAD_READY = 'ready';

export type AnalysisResponse = { id: number; ok: true; value: string | AgentSummary | Selection } | { id: number; ok: false; message: string };

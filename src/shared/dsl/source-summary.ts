import { conversationalVerdict, type AgentVerdict, type RegistryEntry } from './conversational-definition.js';
import { buildReport } from './parse-report.js';
import { parseDsl } from './parser.js';

// What list_agents and the startup summary show for one agent source: the
// agents it declares, whether its definition passes the conversational check
// (and why not), and whether it has schedules or channels. Computed once per file at startup,
// in the DSL analysis thread.

export interface AgentSummary {
  stem: string;
  file: string;
  bytes: number;
  /** Names of the `agent` declarations in the file, in source order. */
  declared_agents: string[];
  /**
   * The conversational check of the file: the declared agent it runs as, or why the text-response
   * route refuses it. Whether a policy lets it answer is asked by the supervisor (agent-refusal.ts).
   */
  verdict: AgentVerdict;
  has_schedules: boolean;
  has_channels: boolean;
  syntax_errors: number;
}

/**
 * The summary of `entry`. `peers` are the registry entries sharing its stem
 * (their text is not needed): a stem shared by two files is ambiguous.
 */
export function summariseSource(entry: RegistryEntry & { bytes: number }, peers: readonly RegistryEntry[]): AgentSummary {
  // One parse per file serves both the report summary and the conversational verdict.
  const parsed = parseDsl(entry.text);
  const report = buildReport(parsed.file, parsed.errors, entry.text, entry.file);
  const summary: AgentSummary = {
    stem: entry.stem,
    file: entry.file,
    bytes: entry.bytes,
    declared_agents: report.agents.map((a) => a.name),
    verdict: { invocable: false, refusal: { kind: 'not_conversational', file: entry.file, problem: 'the conversational check failed on this file' } },
    has_schedules: report.schedules.length > 0,
    has_channels: report.channels.length > 0,
    syntax_errors: report.errors.length,
  };
  try {
    summary.verdict = conversationalVerdict({ stem: entry.stem, file: entry.file, text: entry.text }, peers, parsed);
  } catch {
    // The refusal set above stands.
  }
  return summary;
}

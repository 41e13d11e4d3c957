import type { OperatorLog } from '../operator/operator-log.js';

// What an operator reads at a glance (docs/running.md, "The summary"): runs by
// outcome and reason, p50/p99 duration, the capacity high-water mark, refusals
// and the process's resident memory; at shutdown, and every --summary-interval
// minutes while runs happen.

/** Durations kept for the percentiles; past this, a uniform sample of them (reservoir). */
const DURATIONS_KEPT = 10_000;

export class RunStatistics {
  private readonly outcomes = new Map<string, number>();
  private readonly reasons = new Map<string, number>();
  private readonly durations: number[] = [];
  private runs = 0;
  private runsAtLastSummary = 0;
  private highWater = 0;
  private refusedAtCapacity = 0;
  private refusedBeforeInference = 0;

  constructor(private readonly maxInvocations: number) {}

  runEnded(outcome: string, reason: string, durationMs: number): void {
    this.runs += 1;
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
    if (this.durations.length < DURATIONS_KEPT) this.durations.push(durationMs);
    else {
      const slot = Math.floor(Math.random() * this.runs);
      if (slot < DURATIONS_KEPT) this.durations[slot] = durationMs;
    }
  }

  /** Runs in progress now (the owner table's size after a run started). */
  inProgress(count: number): void {
    if (count > this.highWater) this.highWater = count;
  }

  refused(kind: 'at_capacity' | 'before_inference'): void {
    if (kind === 'at_capacity') this.refusedAtCapacity += 1;
    else this.refusedBeforeInference += 1;
  }

  /** Whether a run ended since the last summary (the interval summary is written only then). */
  changedSinceSummary(): boolean {
    return this.runs !== this.runsAtLastSummary;
  }

  /** One `summary` line on `log`. */
  writeSummary(log: OperatorLog, when: 'shutdown' | 'interval'): void {
    this.runsAtLastSummary = this.runs;
    const sorted = [...this.durations].sort((a, b) => a - b);
    const p50 = percentile(sorted, 0.5);
    const p99 = percentile(sorted, 0.99);
    const outcomes = Object.fromEntries([...this.outcomes].sort());
    const reasons = Object.fromEntries([...this.reasons].sort());
    const rss = process.memoryUsage.rss();
    const counts = (map: Record<string, number>): string =>
      Object.entries(map)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ') || 'none';
    const durations = p50 === null ? 'no durations' : `duration p50 ${p50} ms, p99 ${p99} ms`;
    log.info(
      `${this.runs} run(s): ${counts(outcomes)}; ${durations}; at most ${this.highWater} of ${this.maxInvocations} in progress; ` +
        `refused ${this.refusedAtCapacity} at capacity, ${this.refusedBeforeInference} before inference; RSS ${Math.round(rss / 1048576)} MiB`,
      {
        event: 'summary',
        when,
        runs: this.runs,
        outcomes,
        reasons,
        p50_ms: p50,
        p99_ms: p99,
        in_progress_max: this.highWater,
        max_invocations: this.maxInvocations,
        refused_at_capacity: this.refusedAtCapacity,
        refused_before_inference: this.refusedBeforeInference,
        rss_bytes: rss,
      },
    );
  }
}

/** Nearest-rank percentile of ascending `sorted`, or null when empty. */
function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

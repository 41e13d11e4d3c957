import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import pTimeout from 'p-timeout';
import type { Piscina } from 'piscina';
import { JournalHandover } from '../../shared/journal/journal-handover.js';
import { RUN_CANCELLED_MESSAGE } from '../../shared/journal/journal-format.js';
import type { AuditReference, InvokeOutcome, InvokeTask, ProviderNote, RunDefinition, RunPhase, WorkerNotice } from '../../shared/worker-protocol.js';
import type { ClaimOutcome } from './unstarted-run-finaliser.js';

// The run owner table: one entry per live invocation, kept until that run's
// terminal record is durable (or known to be impossible), whatever happened to
// the MCP request that started it. Dropping the caller never drops the owner.

export interface RunHooks {
  onProgress?: (phase: RunPhase) => void;
  /** A retry or the provider's words, said on standard error as it happens. */
  onProvider?: (note: ProviderNote) => void;
}

export interface TerminalRecovery {
  /** Writes a terminal record through a fresh writer when the worker could not. Returns whether it is durable. */
  (runId: string, principal: string, message: string): Promise<boolean>;
}

/** Claims and finalises a run whose worker has not created its journal yet (see unstarted-run-finaliser.ts). */
export type UnstartedRunFinaliser = (runId: string, definition: RunDefinition, message: string) => Promise<ClaimOutcome>;

/** Who asked a run to stop: the MCP client (a cancellation), or the server's shutdown. */
export type CancelSource = 'client' | 'shutdown';

/** What the worker told of the provider calls, for the operator's `run.ended`. */
export interface AttemptReport {
  /** Provider attempts sent (0 when the run stopped before its first). */
  attempts: number;
  /** Why a failure that could have been tried again was not, if one was not. */
  notRetried?: string;
}

export interface RunOwner {
  readonly runId: string;
  readonly agent: string;
  readonly startedAt: number;
  /** Settles once the run's terminal record is durable or definitively failed. Never rejects. */
  readonly done: Promise<InvokeOutcome>;
  cancel(reason: string, by: CancelSource): void;
  /** When cancel() was first called (performance.now()), if it was. */
  cancelRequestedAt(): number | undefined;
  /** Who called cancel() first, if anyone did. */
  cancelledBy(): CancelSource | undefined;
  attemptReport(): AttemptReport;
}

export class RunOwnerTable {
  private readonly runs = new Map<string, RunOwner>();
  /** Live runs whose cancel was requested: being finished, their callers no longer wait on them. */
  private cancelledRuns = 0;
  private closedReason: string | undefined;

  constructor(
    /** The worker pool, created on first use so a session that never invokes starts no threads. */
    private readonly pool: () => Piscina,
    private readonly recoverTerminal: TerminalRecovery,
    private readonly finaliseUnstarted: UnstartedRunFinaliser,
  ) {}

  get size(): number {
    return this.runs.size;
  }

  /** Live runs a caller still waits on: not cancelled. */
  get waitedOn(): number {
    return this.runs.size - this.cancelledRuns;
  }

  /** Live runs cancelled and still being finished (their terminal record to be written). */
  get finishing(): number {
    return this.cancelledRuns;
  }

  /** Why no run may start any more (shutdown has begun), or undefined while runs may start. */
  get closed(): string | undefined {
    return this.closedReason;
  }

  /** No run starts from now on, and every live run is cancelled with `reason`. */
  close(reason: string): void {
    this.closedReason ??= reason;
    this.cancelAll(reason, 'shutdown');
  }

  start(task: Omit<InvokeTask, 'port' | 'handover'>, hooks: RunHooks = {}): RunOwner {
    // Callers check `closed` first, in the same synchronous step; this is the backstop.
    if (this.closedReason !== undefined) throw new Error(`no run may start: ${this.closedReason}`);
    // Before anything of the run exists: a pool whose thread cannot start refuses the run (the caller says why).
    const pool = this.pool();
    const owner = new OwnedRun(task, hooks, pool, this.recoverTerminal, this.finaliseUnstarted, {
      cancelled: () => {
        this.cancelledRuns += 1;
      },
      settled: (wasCancelled) => {
        this.runs.delete(task.runId);
        if (wasCancelled) this.cancelledRuns -= 1;
      },
    });
    this.runs.set(task.runId, owner);
    return owner;
  }

  cancelAll(reason: string, by: CancelSource): void {
    for (const owner of this.runs.values()) owner.cancel(reason, by);
  }

  /** Waits for every live run to settle, up to `timeoutMs`. */
  async drain(timeoutMs: number): Promise<{ finalised: number; notFinalised: number }> {
    const pending = [...this.runs.values()];
    let finalised = 0;
    const settled = Promise.all(
      pending.map((owner) =>
        owner.done.then((outcome) => {
          // A run refused before its journal existed has nothing to finalise.
          if (outcome.ok || outcome.terminalDurable || outcome.audit === undefined) finalised += 1;
        }),
      ),
    );
    // A zero bound means: count what has already settled, wait for nothing.
    if (timeoutMs > 0) await pTimeout(settled, { milliseconds: timeoutMs, fallback: () => undefined });
    else await new Promise<void>((resolve) => setImmediate(resolve));
    return { finalised, notFinalised: pending.length - finalised };
  }
}

/** What a run tells its table: its cancel was requested; it settled (and whether it had been cancelled). */
interface TableEntry {
  cancelled(): void;
  settled(wasCancelled: boolean): void;
}

/**
 * One live run, as its owner knows it. Its state, all in the fields below: whether the worker said
 * it created the journal (`journal`); whether a cancel was requested, and by whom (`cancelRequest`);
 * whether the owner itself claimed the run at that cancel (`claim`: it finalised an unstarted run,
 * or took an open journal between two of the worker's writes), in which case the owner's records
 * are the run's outcome; and whether the run has settled (`settled`).
 */
class OwnedRun implements RunOwner {
  readonly runId: string;
  readonly agent: string;
  readonly startedAt: number;
  readonly done: Promise<InvokeOutcome>;

  /** The run's journal, once the worker said it created it: a cancel then takes it rather than claiming the run. */
  private journal: AuditReference | undefined;
  /** The cancel, once requested: when (performance.now()), why and by whom. */
  private cancelRequest: { at: number; reason: string; by: CancelSource } | undefined;
  /** The owner's claim on the run, made at the cancel when the owner could end the run itself. */
  private claim: Promise<ClaimOutcome> | undefined;
  private settled = false;
  private readonly attempts: AttemptReport = { attempts: 0 };

  private readonly ownerPort: MessagePort;
  private readonly handover = new JournalHandover();
  // A claimed run is over once the owner's terminal record is durable; the
  // worker, whenever it picks the task up, finds the journal taken and writes nothing.
  private settleClaimed: (outcome: InvokeOutcome) => void = () => undefined;

  constructor(
    private readonly task: Omit<InvokeTask, 'port' | 'handover'>,
    private readonly hooks: RunHooks,
    pool: Piscina,
    private readonly recoverTerminal: TerminalRecovery,
    private readonly finaliseUnstarted: UnstartedRunFinaliser,
    private readonly table: TableEntry,
  ) {
    this.runId = task.runId;
    this.agent = task.definition.declaredName;
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    this.ownerPort = ownerPort;
    ownerPort.on('message', (notice: WorkerNotice) => this.onNotice(notice));
    const claimedRun = new Promise<InvokeOutcome>((resolve) => {
      this.settleClaimed = resolve;
    });

    // piscina starts a further thread inside run(): a thread that cannot start fails this run, below, like a lost one.
    const handOver = (): Promise<InvokeOutcome> => {
      try {
        return pool.run({ ...task, port: workerPort, handover: this.handover.buffer } satisfies InvokeTask, {
          transferList: [workerPort],
        }) as Promise<InvokeOutcome>;
      } catch (err) {
        return Promise.reject(err);
      }
    };
    const workerRun = handOver()
      .then(async (outcome: InvokeOutcome) => {
        this.drainNotices();
        return (await this.claimedOutcome()) ?? outcome;
      })
      .catch(async (err: unknown): Promise<InvokeOutcome> => {
        this.drainNotices();
        const claimed = await this.claimedOutcome();
        if (claimed !== undefined) return claimed;
        // The worker task itself failed (a crash, not a run failure): finish
        // the audit from here so the journal still ends with a terminal record.
        const message = `the worker running this invocation failed: ${(err as Error)?.message ?? String(err)}`;
        const { journal } = this;
        if (journal === undefined) return { ok: false, message, terminalDurable: false, cancelled: this.cancelRequest !== undefined };
        const durable = await this.recoverTerminal(task.runId, task.definition.principal, message).catch(() => false);
        const outcome: InvokeOutcome = { ok: false, message, audit: journal, terminalDurable: durable, cancelled: this.cancelRequest !== undefined };
        if (durable) outcome.terminalDurableAt = performance.timeOrigin + performance.now();
        return outcome;
      });
    this.done = Promise.race([claimedRun, workerRun]).finally(() => {
      ownerPort.close();
      this.settled = true;
      this.table.settled(this.cancelRequest !== undefined);
    });
    this.startedAt = performance.now();
  }

  cancel(reason: string, by: CancelSource): void {
    if (this.cancelRequest !== undefined || this.settled) return;
    this.cancelRequest = { at: performance.now(), reason, by };
    this.table.cancelled();
    try {
      this.ownerPort.postMessage({ type: 'cancel', reason });
    } catch {
      // The port closes when the run ends; a late cancel has nothing left to stop.
      return;
    }
    // Posted first, so a worker that loses the claim finds the cancel waiting.
    this.drainNotices();
    const { task } = this;
    if (this.journal === undefined) {
      // The journal gets Symbiont's words for a cancel; the caller gets `reason`.
      this.claim = this.finaliseUnstarted(task.runId, task.definition, RUN_CANCELLED_MESSAGE).catch((): ClaimOutcome => ({ claimed: false }));
    } else if (this.handover.take()) {
      // Between two of the worker's writes: the owner ends the run now, rather than when the
      // worker's thread, busy with other runs, reaches the cancel (journal-handover.ts).
      const audit = this.journal;
      this.claim = this.recoverTerminal(task.runId, task.definition.principal, RUN_CANCELLED_MESSAGE).then(
        (durable): ClaimOutcome => ({
          claimed: true,
          finalised: durable ? { audit, terminalDurableAt: performance.timeOrigin + performance.now() } : undefined,
        }),
        (): ClaimOutcome => ({ claimed: true, finalised: undefined }),
      );
    }
    if (this.claim !== undefined) {
      void this.claimedOutcome().then((outcome) => {
        if (outcome !== undefined) this.settleClaimed(outcome);
      });
    }
  }

  cancelRequestedAt(): number | undefined {
    return this.cancelRequest?.at;
  }

  cancelledBy(): CancelSource | undefined {
    return this.cancelRequest?.by;
  }

  // Notices still queued when the run settled were taken before `done` resolved (drainNotices).
  attemptReport(): AttemptReport {
    return { ...this.attempts };
  }

  private onNotice(notice: WorkerNotice): void {
    if (notice.type === 'journal') this.journal = { run_id: this.task.runId, path: notice.path, public_key: notice.publicKey };
    if (notice.type === 'progress') this.hooks.onProgress?.(notice.phase);
    if (notice.type === 'provider') this.hooks.onProvider?.(notice.note);
    if (notice.type === 'attempt') this.attempts.attempts = notice.attempt;
    if (notice.type === 'not_retried') this.attempts.notRetried = notice.why;
  }

  // The task's result travels on piscina's channel, not this port, so notices
  // the worker posted before returning may still be queued: take them first.
  private drainNotices(): void {
    for (let queued = receiveMessageOnPort(this.ownerPort); queued !== undefined; queued = receiveMessageOnPort(this.ownerPort)) {
      this.onNotice(queued.message as WorkerNotice);
    }
  }

  // When this owner claimed the run (cancelled before its worker started it),
  // the owner's own records are the run's outcome, whatever the worker reports.
  private async claimedOutcome(): Promise<InvokeOutcome | undefined> {
    const claimed = await this.claim;
    if (claimed === undefined || !claimed.claimed) return undefined;
    const outcome: InvokeOutcome = { ok: false, message: this.cancelRequest?.reason ?? '', terminalDurable: claimed.finalised !== undefined, cancelled: true };
    if (claimed.finalised !== undefined) {
      outcome.audit = claimed.finalised.audit;
      outcome.terminalDurableAt = claimed.finalised.terminalDurableAt;
    }
    return outcome;
  }
}

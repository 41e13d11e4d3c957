import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import pTimeout from 'p-timeout';
import type { Piscina } from 'piscina';
import { JournalHandover } from '../../shared/journal/journal-handover.js';
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
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    const handover = new JournalHandover();
    let cancelAt: number | undefined;
    let cancelReason = '';
    let cancelSource: CancelSource | undefined;
    const attempts: AttemptReport = { attempts: 0 };
    let journal: AuditReference | undefined;
    let claim: Promise<ClaimOutcome> | undefined;

    const onNotice = (notice: WorkerNotice): void => {
      if (notice.type === 'journal') journal = { run_id: task.runId, path: notice.path, public_key: notice.publicKey };
      if (notice.type === 'progress') hooks.onProgress?.(notice.phase);
      if (notice.type === 'provider') hooks.onProvider?.(notice.note);
      if (notice.type === 'attempt') attempts.attempts = notice.attempt;
      if (notice.type === 'not_retried') attempts.notRetried = notice.why;
    };
    ownerPort.on('message', onNotice);
    // The task's result travels on piscina's channel, not this port, so notices
    // the worker posted before returning may still be queued: take them first.
    const drainNotices = (): void => {
      for (let queued = receiveMessageOnPort(ownerPort); queued !== undefined; queued = receiveMessageOnPort(ownerPort)) {
        onNotice(queued.message as WorkerNotice);
      }
    };

    // When this owner claimed the run (cancelled before its worker started it),
    // the owner's own records are the run's outcome, whatever the worker reports.
    const claimedOutcome = async (): Promise<InvokeOutcome | undefined> => {
      const claimed = await claim;
      if (claimed === undefined || !claimed.claimed) return undefined;
      const outcome: InvokeOutcome = { ok: false, message: cancelReason, terminalDurable: claimed.finalised !== undefined, cancelled: true };
      if (claimed.finalised !== undefined) {
        outcome.audit = claimed.finalised.audit;
        outcome.terminalDurableAt = claimed.finalised.terminalDurableAt;
      }
      return outcome;
    };

    // A claimed run is over once the owner's terminal record is durable; the
    // worker, whenever it picks the task up, finds the journal taken and writes nothing.
    let settleClaimed: (outcome: InvokeOutcome) => void = () => undefined;
    const claimedRun = new Promise<InvokeOutcome>((resolve) => {
      settleClaimed = resolve;
    });

    // piscina starts a further thread inside run(): a thread that cannot start fails this run, below, like a lost one.
    const handOver = (): Promise<InvokeOutcome> => {
      try {
        return pool.run({ ...task, port: workerPort, handover: handover.buffer } satisfies InvokeTask, { transferList: [workerPort] }) as Promise<InvokeOutcome>;
      } catch (err) {
        return Promise.reject(err);
      }
    };
    const workerRun = handOver()
      .then(async (outcome: InvokeOutcome) => {
        drainNotices();
        return (await claimedOutcome()) ?? outcome;
      })
      .catch(async (err: unknown): Promise<InvokeOutcome> => {
        drainNotices();
        const claimed = await claimedOutcome();
        if (claimed !== undefined) return claimed;
        // The worker task itself failed (a crash, not a run failure): finish
        // the audit from here so the journal still ends with a terminal record.
        const message = `the worker running this invocation failed: ${(err as Error)?.message ?? String(err)}`;
        if (journal === undefined) return { ok: false, message, terminalDurable: false, cancelled: cancelAt !== undefined };
        const durable = await this.recoverTerminal(task.runId, task.definition.principal, message).catch(() => false);
        const outcome: InvokeOutcome = { ok: false, message, audit: journal, terminalDurable: durable, cancelled: cancelAt !== undefined };
        if (durable) outcome.terminalDurableAt = performance.timeOrigin + performance.now();
        return outcome;
      });
    const done = Promise.race([claimedRun, workerRun]).finally(() => {
      ownerPort.close();
      this.runs.delete(task.runId);
      if (cancelAt !== undefined) this.cancelledRuns -= 1;
    });

    const owner: RunOwner = {
      runId: task.runId,
      agent: task.definition.declaredName,
      startedAt: performance.now(),
      done,
      cancel: (reason: string, by: CancelSource) => {
        if (cancelAt !== undefined || !this.runs.has(task.runId)) return;
        cancelAt = performance.now();
        cancelReason = reason;
        cancelSource = by;
        this.cancelledRuns += 1;
        try {
          ownerPort.postMessage({ type: 'cancel', reason });
        } catch {
          // The port closes when the run ends; a late cancel has nothing left to stop.
          return;
        }
        // Posted first, so a worker that loses the claim finds the cancel waiting.
        drainNotices();
        if (journal === undefined) {
          claim = this.finaliseUnstarted(task.runId, task.definition, reason).catch((): ClaimOutcome => ({ claimed: false }));
        } else if (handover.take()) {
          // Between two of the worker's writes: the owner ends the run now, rather than when the
          // worker's thread, busy with other runs, reaches the cancel (journal-handover.ts).
          const audit = journal;
          claim = this.recoverTerminal(task.runId, task.definition.principal, reason).then(
            (durable): ClaimOutcome => ({ claimed: true, finalised: durable ? { audit, terminalDurableAt: performance.timeOrigin + performance.now() } : undefined }),
            (): ClaimOutcome => ({ claimed: true, finalised: undefined }),
          );
        }
        if (claim !== undefined) {
          void claimedOutcome().then((outcome) => {
            if (outcome !== undefined) settleClaimed(outcome);
          });
        }
      },
      cancelRequestedAt: () => cancelAt,
      cancelledBy: () => cancelSource,
      // Notices still queued when the run settled were taken before `done` resolved (drainNotices).
      attemptReport: () => ({ ...attempts }),
    };
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

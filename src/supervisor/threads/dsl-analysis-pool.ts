import type { Worker } from 'node:worker_threads';
import pTimeout from 'p-timeout';
import {
  ANALYSIS_THREAD_READY,
  type AnalysisJob,
  type AnalysisRequest,
  type AnalysisResponse,
  type AnalysisValue,
} from '../../shared/dsl/analysis-messages.js';
import { DSL_ANALYSIS_BUDGET_MS, DSL_ANALYSIS_QUEUE_MAX } from '../../shared/limits.js';
import type { OperatorLog } from '../operator/operator-log.js';
import { startSandboxedThread, THREAD_LOADING_WAIT_MS } from './sandboxed-thread.js';
import { DSL_ANALYSIS_TASK_MODULE } from '../../shared/worker-modules.js';

// One thread that analyses DSL text (parse_dsl reports, the startup summaries
// of agent sources) so that the supervisor's event loop keeps answering every
// other request and cancellation meanwhile. Texts are analysed one at a time:
// the server's own (the startup summaries, invoke_agent's selection of an
// agent's definition) first, then callers' parse_dsl texts, each kind in the
// order asked, so callers' texts never hold up an invocation. Each gets a time
// budget: past it the thread is ended (the only way to stop a synchronous
// parse) and the text gets a one-line refusal; the next text starts a fresh
// thread.
//
// The thread is started on first use and ended after a short idle time, so a
// server that is not parsing holds no second V8 heap. A plain Worker rather
// than piscina: piscina cannot end one task's thread on a deadline. Like every
// thread, it is started by the thread factory (sandboxed-thread.ts).

/** How long the thread stays up with nothing to do. */
const DSL_ANALYSIS_IDLE_MS = 500;

// A hostile text cannot take the server's memory with it: past this heap the
// thread ends with ERR_WORKER_OUT_OF_MEMORY and the text is refused.
const ANALYSIS_RESOURCE_LIMITS = { maxOldGenerationSizeMb: 512, stackSizeMb: 4 } as const;

// Tests that use this pool import it from dist/: a worker thread does not
// inherit tsx's loader on every supported Node.js.

export type AnalysisOutcome<T> = { ok: true; value: T } | { ok: false; message: string };

interface Pending {
  request: AnalysisRequest;
  settle: (outcome: AnalysisOutcome<unknown>) => void;
}

export interface DslAnalysisPoolOptions {
  /** Where the thread's stray standard output is said. */
  log: OperatorLog;
  budgetMs?: number;
  idleMs?: number;
}

export class DslAnalysisPool {
  private readonly budgetMs: number;
  private readonly idleMs: number;
  private readonly log: OperatorLog;
  /** The server's own analyses: the startup summaries and invoke_agent's selections. */
  private readonly ownQueue: Pending[] = [];
  /** Callers' parse_dsl texts, at most DSL_ANALYSIS_QUEUE_MAX waiting. */
  private readonly callerQueue: Pending[] = [];
  private worker: Worker | null = null;
  /** Whether the thread has loaded its modules: the budget counts analysis, not thread start. */
  private workerReady = false;
  /** Settles once the current thread has loaded its modules, or has ended. */
  private workerLoaded: Promise<void> = Promise.resolve();
  private running: Pending | null = null;
  private budgetTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  constructor(options: DslAnalysisPoolOptions) {
    this.log = options.log;
    this.budgetMs = options.budgetMs ?? DSL_ANALYSIS_BUDGET_MS;
    this.idleMs = options.idleMs ?? DSL_ANALYSIS_IDLE_MS;
  }

  /** Analyses one job within the budget; never rejects. */
  run<J extends AnalysisJob>(job: J): Promise<AnalysisOutcome<AnalysisValue<J>>> {
    if (this.closed) return Promise.resolve({ ok: false, message: 'the server is shutting down' });
    // Callers' texts are bounded in number; the server's own by discovery's limits (one summary
    // per source, one selection per agent).
    const queue = job.kind === 'report' ? this.callerQueue : this.ownQueue;
    if (queue === this.callerQueue && queue.length >= DSL_ANALYSIS_QUEUE_MAX) {
      return Promise.resolve({
        ok: false,
        message: `busy: ${DSL_ANALYSIS_QUEUE_MAX} texts are already waiting for analysis; send this one again once they are answered`,
      });
    }
    return new Promise((resolve) => {
      queue.push({ request: { ...job, id: this.nextId++ }, settle: resolve as Pending['settle'] });
      this.startNext();
    });
  }

  /** Ends the thread; queued jobs are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const pending of [...this.ownQueue.splice(0), ...this.callerQueue.splice(0)]) pending.settle({ ok: false, message: 'the server is shutting down' });
    this.finish({ ok: false, message: 'the server is shutting down' });
    // A thread still loading its modules is let finish first (THREAD_LOADING_WAIT_MS says why).
    if (this.worker !== null && !this.workerReady) await pTimeout(this.workerLoaded, { milliseconds: THREAD_LOADING_WAIT_MS, fallback: () => undefined });
    await this.endWorker();
  }

  private startNext(): void {
    if (this.running !== null) return;
    const pending = this.ownQueue.shift() ?? this.callerQueue.shift();
    if (pending === undefined) return;
    this.clearIdleTimer();
    this.running = pending;
    let worker: Worker;
    try {
      worker = this.ensureWorker();
    } catch (err) {
      // The job is refused with the reason; the next one tries to start a thread again.
      this.finish({ ok: false, message: `the analysis thread could not start: ${(err as Error).message}` });
      return;
    }
    worker.ref();
    if (this.workerReady) this.startBudget();
    worker.postMessage(pending.request);
  }

  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startSandboxedThread(DSL_ANALYSIS_TASK_MODULE, { kind: 'analysis', resourceLimits: ANALYSIS_RESOURCE_LIMITS, log: this.log });
    let loaded: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (loaded = resolve));
    worker.on('message', (response: AnalysisResponse | typeof ANALYSIS_THREAD_READY) => {
      if (response === ANALYSIS_THREAD_READY) {
        this.workerReady = true;
        loaded();
        if (this.running !== null) this.startBudget();
        return;
      }
      // Anything else the thread posts (the lines its sandbox captured) is the factory's to say.
      if (typeof response !== 'object' || response === null || this.running?.request.id !== response.id) return;
      this.finish(response.ok ? { ok: true, value: response.value } : { ok: false, message: response.message });
    });
    worker.on('error', (err: Error & { code?: string }) => this.threadLost(worker, err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'error'));
    worker.on('exit', () => {
      loaded();
      this.threadLost(worker, 'error');
    });
    this.worker = worker;
    this.workerReady = false;
    this.workerLoaded = done;
    return worker;
  }

  private startBudget(): void {
    this.budgetTimer = setTimeout(() => this.overBudget(), this.budgetMs);
  }

  private overBudget(): void {
    this.budgetTimer = null;
    const seconds = this.budgetMs / 1000;
    this.finish({ ok: false, message: `too complex to analyse within ${seconds} s; the analysis was stopped` });
    void this.endWorker();
  }

  private threadLost(worker: Worker, why: 'memory' | 'error'): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.finish({
      ok: false,
      message:
        why === 'memory'
          ? "too large to analyse within the analysis thread's memory limit; the analysis was stopped"
          : 'the analysis thread stopped unexpectedly',
    });
  }

  /** Settles the running job, then starts the next one or the idle countdown. */
  private finish(outcome: AnalysisOutcome<unknown>): void {
    const pending = this.running;
    if (pending === null) return;
    this.running = null;
    if (this.budgetTimer !== null) clearTimeout(this.budgetTimer);
    this.budgetTimer = null;
    pending.settle(outcome);
    if (this.closed) return;
    if (this.ownQueue.length + this.callerQueue.length > 0) {
      // Deferred so that a settled caller's continuation runs before the next text starts.
      setImmediate(() => this.startNext());
      return;
    }
    this.worker?.unref();
    this.idleTimer = setTimeout(() => void this.endWorker(), this.idleMs);
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private async endWorker(): Promise<void> {
    this.clearIdleTimer();
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) await worker.terminate();
  }
}

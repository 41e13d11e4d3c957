import pTimeout from 'p-timeout';
import type { RunOwnerTable } from '../runs/run-owners.js';
import type { OperatorLog } from '../operator/operator-log.js';

// The client closing standard input (or the pipe breaking), SIGINT, SIGTERM and
// SIGHUP all end the process through the same steps (SIGHUP is what a closing
// terminal sends the servers an IDE's CLI started; its default action would end
// the process with answers owed and runs without their terminal record): stop admitting (no more input is
// read; a request among the lines already read is answered at once that the
// server is stopping), start no run and cancel every live one, wait (bounded)
// until every request read has its answer (the session's request ledger,
// request-ledger.ts) and every run its terminal record, answer what is still
// owed with an error saying the server is stopping, say what happened, exit.
// Exit 0 only when every run was finalised. A second SIGINT leaves at once.
//
// The process ends by emptying its event loop, with process.exitCode set, not by process.exit.
// process.exit shuts V8's platform down while the main isolate is still alive, and a background
// compile job of that isolate waiting for the isolate's garbage collection then waits forever:
// the process hangs instead of exiting (nodejs/node#54918, open; seen on Node.js 24 in this
// project's CI, docs/architecture.md). An ending event loop disposes of the isolate first, which
// releases such a job. Whatever would still hold the loop open is cut off after EXIT_FALLBACK_MS
// by process.exit, as before.

/**
 * The terminating signals besides SIGINT (which has its own handler, for the second Ctrl-C) that
 * end the session through the steps above; docs/running.md lists what the other signals do.
 */
const ORDERLY_SIGNALS = ['SIGTERM', 'SIGHUP'] as const;

/** How long the emptied event loop may take to end before process.exit ends the process. */
const EXIT_FALLBACK_MS = 2_000;

/** The requests a session has read, as shutdown drains them (the session's RequestLedger). */
export interface RequestsRead {
  /** Stops reading input; settles once every line already read has been handled (a request among them answered with `message`). */
  stopAdmitting(message: string): Promise<void>;
  /** Settles once every request read has its answer (true), or after `timeoutMs` (false). */
  answered(timeoutMs: number): Promise<boolean>;
  /** Answers every request still owed one with an error saying `message`; returns how many. */
  answerRemaining(message: string): number;
}

export interface ShutdownDependencies {
  owners: RunOwnerTable;
  requests: RequestsRead;
  graceMs: number;
  log: OperatorLog;
  /** Closes the MCP transport once every request read is answered. */
  closeSession: () => Promise<void>;
  /** Stops the worker threads once runs are settled. */
  stopWorkers: () => Promise<void>;
  /** Settles once the answers already written to standard output have left the process. */
  outputFlushed?: () => Promise<void>;
  /**
   * Runs first (the startup summary, if the session ended before it was written).
   * Runs are cancelled without waiting for it; it is awaited before the closing lines.
   */
  beforeDrain?: () => void | Promise<void>;
  /** The operator's summary (run-statistics.ts), written once runs are settled. */
  summary?: () => void;
}

/** Settles once the process is set to end (process.exitCode): after it only the event loop's end. */
export type Shutdown = (cause: string) => Promise<void>;

/** Waits for `work` at most `ms` (not at all when `ms` is 0). */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  if (ms > 0) await pTimeout(work, { milliseconds: ms, fallback: () => undefined });
}

/**
 * The steps above, without ending the process or listening for signals: settles with the exit
 * code they come to (0 only when every run was finalised). A session run inside a test process
 * (test/support/in-process-server.ts) shuts down through this; installShutdown adds the rest.
 */
export function orderlyShutdown(deps: ShutdownDependencies): (cause: string) => Promise<number> {
  let inProgress: Promise<number> | undefined;
  return (cause: string): Promise<number> => {
    inProgress ??= (async (): Promise<number> => {
      const { owners, requests, graceMs, log } = deps;
      const summary = deps.beforeDrain?.();
      const stopping = `the server is shutting down (${cause})`;
      const deadline = performance.now() + graceMs;
      const left = (): number => Math.max(0, deadline - performance.now());
      const inputHandled = requests.stopAdmitting(`${stopping}; the request was not run`);
      const live = owners.size;
      owners.close(stopping);
      log.info('stopping: no new request or run is admitted', { event: 'shutdown.stopping', cause, live_runs: live });
      await within(inputHandled, left());
      const [, { finalised, notFinalised }] = await Promise.all([requests.answered(left()), owners.drain(left())]);
      // A settled run's answer is written over the microtasks that follow its settling: one turn lets every handler send it.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const answeredAsStopping = requests.answerRemaining(`${stopping}; no answer was ready within the shutdown grace period of ${graceMs} ms`);
      await summary;
      log.info('shutting down', {
        event: 'shutdown',
        cause,
        live_runs: live,
        finalised,
        not_finalised: notFinalised,
        answered_as_stopping: answeredAsStopping,
      });
      if (notFinalised > 0) {
        log.warn(`${notFinalised} run(s) were not finalised within ${graceMs} ms; their journals need reconciliation`, { event: 'shutdown.unfinalised' });
      }
      deps.summary?.();
      await deps.closeSession().catch(() => undefined);
      await deps.stopWorkers().catch(() => undefined);
      // process.exit drops what a pipe has not yet taken; the client is owed those answers.
      if (deps.outputFlushed !== undefined) await within(deps.outputFlushed(), Math.max(graceMs, 1));
      return notFinalised === 0 ? 0 : 1;
    })();
    return inProgress;
  };
}

export function installShutdown(deps: ShutdownDependencies): Shutdown {
  const steps = orderlyShutdown(deps);
  let inProgress: Promise<void> | undefined;

  const shutdown = (cause: string): Promise<void> => {
    inProgress ??= steps(cause).then((exitCode) => {
      process.exitCode = exitCode;
      setTimeout(() => process.exit(exitCode), EXIT_FALLBACK_MS).unref();
    });
    return inProgress;
  };

  process.on('SIGINT', () => {
    if (inProgress !== undefined) {
      deps.log.warn('second SIGINT: exiting now without waiting for runs', { event: 'shutdown.forced' });
      process.exit(130);
    }
    void shutdown('SIGINT');
  });
  for (const signal of ORDERLY_SIGNALS) process.on(signal, () => void shutdown(signal));
  return shutdown;
}

import pTimeout from 'p-timeout';
import type { RunOwnerTable } from './run-owners.js';
import type { OperatorLog } from './operator-log.js';

// The client going away (standard input ends, the pipe breaks), SIGINT and
// SIGTERM all end the process the same way: cancel every live run, wait
// (bounded) for their terminal records, say what happened, exit. Exit 0 only
// when every run was finalised. A second SIGINT leaves at once.

export interface ShutdownDependencies {
  owners: RunOwnerTable;
  graceMs: number;
  log: OperatorLog;
  /** Closes the MCP transport once runs are settled. */
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

export type Shutdown = (cause: string) => Promise<never>;

export function installShutdown(deps: ShutdownDependencies): Shutdown {
  let inProgress: Promise<never> | undefined;

  const shutdown = (cause: string): Promise<never> => {
    inProgress ??= (async (): Promise<never> => {
      const summary = deps.beforeDrain?.();
      const live = deps.owners.size;
      deps.owners.cancelAll(`the server is shutting down (${cause})`);
      const { finalised, notFinalised } = await deps.owners.drain(deps.graceMs);
      await summary;
      deps.log.info('shutting down', { event: 'shutdown', cause, live_runs: live, finalised, not_finalised: notFinalised });
      if (notFinalised > 0) {
        deps.log.warn(`${notFinalised} run(s) were not finalised within ${deps.graceMs} ms; their journals need reconciliation`, { event: 'shutdown.unfinalised' });
      }
      deps.summary?.();
      // A settled run's answer is written over the microtasks that follow its
      // settling: one turn lets every handler send it before the session closes.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await deps.closeSession().catch(() => undefined);
      await deps.stopWorkers().catch(() => undefined);
      // process.exit drops what a pipe has not yet taken; the client is owed those answers.
      if (deps.outputFlushed !== undefined) await pTimeout(deps.outputFlushed(), { milliseconds: Math.max(deps.graceMs, 1), fallback: () => undefined });
      process.exit(notFinalised === 0 ? 0 : 1);
    })();
    return inProgress;
  };

  process.on('SIGINT', () => {
    if (inProgress !== undefined) {
      deps.log.warn('second SIGINT: exiting now without waiting for runs', { event: 'shutdown.forced' });
      process.exit(130);
    }
    void shutdown('SIGINT');
  });
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  return shutdown;
}

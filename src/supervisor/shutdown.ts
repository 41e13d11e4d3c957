import type { Readable, Writable } from 'node:stream';
import type { Piscina } from 'piscina';
import type { RunOwnerTable } from './run-owners.js';
import type { RunLog } from './tools/invoke-agent-tool.js';

// The client going away (standard input ends, the pipe breaks), SIGINT and
// SIGTERM all end the session the same way: cancel every live run, wait
// (bounded) for their terminal records, say what happened, exit. Exit 0 only
// when every run was finalised. A second SIGINT leaves at once.

export interface ShutdownDependencies {
  owners: RunOwnerTable;
  pool: Piscina;
  graceMs: number;
  log: RunLog;
  input: Readable;
  output: Writable;
  /** Closes the MCP transport once runs are settled. */
  closeSession: () => Promise<void>;
}

export function installShutdown(deps: ShutdownDependencies): (cause: string) => Promise<void> {
  let shuttingDown = false;

  const shutdown = async (cause: string): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    const live = deps.owners.size;
    deps.owners.cancelAll(`the server is shutting down (${cause})`);
    const { finalised, notFinalised } = await deps.owners.drain(deps.graceMs);
    deps.log.info('shutting down', { cause, live_runs: live, finalised, not_finalised: notFinalised });
    if (notFinalised > 0) deps.log.warn(`${notFinalised} run(s) were not finalised within ${deps.graceMs} ms; their journals need reconciliation`);
    await deps.closeSession().catch(() => undefined);
    await deps.pool.destroy().catch(() => undefined);
    process.exit(notFinalised === 0 ? 0 : 1);
  };

  process.on('SIGINT', () => {
    if (shuttingDown) {
      deps.log.warn('second SIGINT: exiting now without waiting for runs');
      process.exit(130);
    }
    void shutdown('SIGINT');
  });
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  deps.input.on('end', () => void shutdown('the client closed standard input'));
  deps.input.on('close', () => void shutdown('the client closed standard input'));
  deps.output.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') void shutdown('the client pipe broke');
  });
  return shutdown;
}

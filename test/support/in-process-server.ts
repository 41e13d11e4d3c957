import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { INVOCATIONS_MAX_DEFAULT, SHUTDOWN_GRACE_MS_DEFAULT } from '../../src/shared/limits.js';
import type { RunningServer } from './server.js';
import { serverEnv } from './server.js';
import { builtModule } from './server-entry.js';

// The session `symbi mcp` serves, run inside the test process: the same wiring
// (assembleSession in src/supervisor/commands/mcp-command.ts: the startup
// snapshot, the DSL analysis, the invoke_agent backend and tool, the session's
// line limiter, message gate and request ledger, the summaries and the shutdown
// steps), over two in-memory streams instead of a child's stdin and stdout, with
// the operator log's lines kept in memory instead of written to descriptor 2.
// For tests of what the tools answer; what only a process shows (stdio framing,
// signals, exit codes, the environment a child gets, captured stderr, other
// users) stays tested through a real process (./server.ts).
//
// The wiring is loaded from dist/ (npm run build first), as test/process/dsl-hostile-server.test.ts
// loads its pool: a worker thread does not inherit tsx's loader on every Node line
// (src/supervisor/threads/dsl-analysis-pool.ts), and dist/'s threads start dist/'s modules.
//
// The client's end is the SDK's own newline-delimited JSON transport (the class is
// named for the server side, but it only reads messages from one stream and writes
// them to another). The SDK's InMemoryTransport would skip the session's input
// path: the limiter, the gate and the request ledger that shutdown drains.

type McpCommand = typeof import('../../src/supervisor/commands/mcp-command.js');
type OperatorLogModule = typeof import('../../src/supervisor/operator/operator-log.js');
type ShutdownModule = typeof import('../../src/supervisor/session/shutdown.js');
type Confinement = typeof import('../../src/shared/confinement/index.js');
type KeyRedaction = typeof import('../../src/shared/secrets/key-redaction.js');

/** How a test starts the in-process session; absent fields are `symbi mcp`'s defaults. */
export interface InProcessOptions {
  /** The environment the session reads its provider and keys from; serverEnv() when absent. */
  env?: Record<string, string>;
  logFormat?: 'text' | 'json';
  shutdownGraceMs?: number;
  maxInvocations?: number;
  /** 0 (the default here): only the shutdown summary. */
  summaryIntervalMs?: number;
}

/** A session served in this process and the SDK client connected to it; stderr() is the operator log so far. */
export interface InProcessServer extends Omit<RunningServer, 'transport' | 'pid'> {
  /** The exit code `symbi mcp` would have ended with, once close() has settled. */
  exitCode(): number | undefined;
}

/** A session served in this process on two in-memory streams, with no client: a test writes and reads the lines itself. */
export interface InProcessSession {
  /** The session's standard input. */
  toServer: PassThrough;
  /** The session's standard output. */
  fromServer: PassThrough;
  /** Resolves with the reason once the session has closed. */
  closed: Promise<string>;
  /** The shutdown steps `symbi mcp` takes once its session has closed; settles with its exit code. */
  shutdown: (cause: string) => Promise<number>;
  stderr: () => string;
}

/** Assembles the session on `project` in this process, on in-memory streams, as `symbi mcp` would. */
export async function startInProcessSession(project: string, options: InProcessOptions = {}): Promise<InProcessSession> {
  const [{ assembleSession }, { createOperatorLog }, { orderlyShutdown }, { pinProject }, { configuredSecrets }] = await Promise.all([
    import(builtModule('supervisor/commands/mcp-command.js')) as Promise<McpCommand>,
    import(builtModule('supervisor/operator/operator-log.js')) as Promise<OperatorLogModule>,
    import(builtModule('supervisor/session/shutdown.js')) as Promise<ShutdownModule>,
    import(builtModule('shared/confinement/index.js')) as Promise<Confinement>,
    import(builtModule('shared/secrets/key-redaction.js')) as Promise<KeyRedaction>,
  ]);
  const env = options.env ?? serverEnv();
  const lines: string[] = [];
  const log = createOperatorLog(options.logFormat ?? 'text', configuredSecrets(env), (line) => lines.push(line));
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  let ended: Promise<number> | undefined;
  const session = await assembleSession(
    pinProject(project, env),
    {
      shutdownGraceMs: options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS_DEFAULT,
      maxInvocations: options.maxInvocations ?? INVOCATIONS_MAX_DEFAULT,
      summaryIntervalMs: options.summaryIntervalMs ?? 0,
    },
    {
      log,
      env,
      io: { stdin: toServer, stdout: fromServer },
      shutdownWith: (deps) => {
        const steps = orderlyShutdown(deps);
        return (cause) => (ended ??= steps(cause));
      },
    },
  );
  return {
    toServer,
    fromServer,
    closed: session.closed,
    shutdown: async (cause) => {
      await session.shutdown(cause);
      return ended!;
    },
    stderr: () => lines.join(''),
  };
}

/** Starts the session on `project` in this process and connects an SDK client to it. */
export async function startInProcessServer(project: string, options: InProcessOptions = {}): Promise<InProcessServer> {
  const { toServer, fromServer, closed, shutdown, stderr } = await startInProcessSession(project, options);
  let exitCode: number | undefined;
  const client = new Client({ name: 'symbi-test', version: '0.0.0' });
  await client.connect(new StdioServerTransport(fromServer, toServer));
  let closing: Promise<void> | undefined;
  return {
    client,
    stderr,
    exitCode: () => exitCode,
    // As the process ends: the client closes the session's input, and the session shuts down with every run finalised.
    close: () =>
      (closing ??= (async () => {
        toServer.end();
        const reason = await closed;
        exitCode = await shutdown(`session closed: ${reason}`);
        await client.close().catch(() => undefined);
      })()),
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
  };
}

import type { Writable } from 'node:stream';
import { Command, CommanderError, Option } from 'commander';
import { INVOCATIONS_MAX_DEFAULT, SHUTDOWN_GRACE_MS_DEFAULT } from '../../shared/limits.js';
import type { PinnedDirectory } from '../../shared/confinement/index.js';
import { pinProjectOption, usageError as commandUsageError, USAGE_EXIT } from './project-option.js';
import { captureStandardError, createOperatorLog, LOG_FORMATS, type LogFormat, type OperatorLog } from '../operator/operator-log.js';
import { configuredSecrets } from '../../shared/secrets/key-redaction.js';
import { takeStartupSnapshot } from '../startup/startup-snapshot.js';
import { DslAnalysisPool } from '../threads/dsl-analysis-pool.js';
import { analyseSources, type SourceAnalysis } from '../startup/source-analysis.js';
import { writeProjectSummary, writeProviderSummary, writeStartupSummary } from '../startup/startup-summary.js';
import { startMcpSession, type SessionIo } from '../session/mcp-session.js';
import type { SessionContext } from '../startup/session-context.js';
import { createInvokeAgentBackend } from '../session/invoke-agent-backend.js';
import { preferSmallHeaps } from '../threads/heap-footprint.js';
import { installShutdown, type ShutdownDependencies } from '../session/shutdown.js';
import { invokeAgentRegistrar } from '../tools/invoke-agent-tool.js';
import { RunStatistics } from '../runs/run-statistics.js';
import { agentStandings, refusalText } from '../runs/agent-refusal.js';
import { watchProjectChanges } from '../startup/project-change-watch.js';

// `symbi mcp`: pin the project, take the startup snapshot, print the summary
// on standard error and serve MCP on stdio until standard input ends.

const SHUTDOWN_GRACE_MS_MAX = 600_000;
// A bound far above what one process's memory holds is no bound at all.
const MAX_INVOCATIONS_MAX = 65_536;
/** A week: a longer interval is no summary at all. */
const SUMMARY_INTERVAL_MAX_MINUTES = 10_080;
const SUMMARY_INTERVAL_MAX_SECONDS = SUMMARY_INTERVAL_MAX_MINUTES * 60;
/** By default a summary every hour while runs happen; a shorter stdio session sees only the shutdown one. */
const SUMMARY_INTERVAL_DEFAULT_MINUTES = 60;
/** How often shutdown looks whether standard output has taken every answer. */
const OUTPUT_FLUSH_POLL_MS = 10;
/** How long the startup summary waits for the client's `initialized` notification. */
const HANDSHAKE_WAIT_MS = 250;

export interface McpCommandOptions {
  project: string;
  logFormat: LogFormat;
  shutdownGraceMs: number;
  maxInvocations: number;
  /** Milliseconds between summaries while runs happen; 0 for none (the shutdown summary is always written). */
  summaryIntervalMs: number;
}

function usageError(message: string): never {
  commandUsageError('mcp', message);
}

function parseLogFormat(value: string): LogFormat {
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  usageError(`--log-format ${JSON.stringify(value)} is not supported; use one of: ${LOG_FORMATS.join(', ')}`);
}

function parseGrace(value: string): number {
  if (!/^\d{1,7}$/.test(value) || Number(value) > SHUTDOWN_GRACE_MS_MAX) {
    usageError(`--shutdown-grace-ms ${JSON.stringify(value)} is not valid; use a whole number of milliseconds from 0 to ${SHUTDOWN_GRACE_MS_MAX}`);
  }
  return Number(value);
}

function parseMaxInvocations(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > MAX_INVOCATIONS_MAX) {
    usageError(`--max-invocations ${JSON.stringify(value)} is not valid; use a whole number from 1 to ${MAX_INVOCATIONS_MAX}`);
  }
  return Number(value);
}

/** Minutes (`5`), or seconds with an `s` suffix (`30s`): seconds let a test or a short session see the interval summary. */
function parseSummaryInterval(value: string): number {
  if (value.endsWith('s')) {
    const seconds = value.slice(0, -1);
    if (!/^\d{1,6}$/.test(seconds) || Number(seconds) > SUMMARY_INTERVAL_MAX_SECONDS) {
      usageError(
        `--summary-interval ${JSON.stringify(value)} is not valid; use a whole number of seconds from 0 (none) to ${SUMMARY_INTERVAL_MAX_SECONDS} followed by s, such as 30s`,
      );
    }
    return Number(seconds) * 1000;
  }
  if (!/^\d{1,5}$/.test(value) || Number(value) > SUMMARY_INTERVAL_MAX_MINUTES) {
    usageError(`--summary-interval ${JSON.stringify(value)} is not valid; use a whole number of minutes from 0 (none) to ${SUMMARY_INTERVAL_MAX_MINUTES}`);
  }
  return Number(value) * 60_000;
}

/** Settles once `stdout` holds no unwritten answers (or can take no more). */
function outputFlushed(stdout: Writable): Promise<void> {
  // Polled: 'drain' only comes after a write that filled the buffer, not after every write.
  return new Promise((resolve) => {
    const check = (): void => {
      if (!stdout.writable || stdout.writableLength === 0) resolve();
      else setTimeout(check, OUTPUT_FLUSH_POLL_MS);
    };
    check();
  });
}

/**
 * Library code must never write to stdout; this keeps a stray console call off the MCP channel
 * (on the stderr stream, which captureStandardError takes over once the log exists).
 */
function keepConsoleOffStdout(): void {
  // Under node --frozen-intrinsics console is frozen: assigning to it would throw and end the
  // process; its methods stay Node.js's own (docs/running.md, Node options, says what that leaves).
  if (Object.isFrozen(console)) return;
  const toStderr = (...args: unknown[]): void => {
    process.stderr.write(`${args.map(String).join(' ')}\n`);
  };
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}

/** What a session is assembled with besides the project: the operator log, the environment it reads its provider from, and its two streams. */
export interface SessionSurroundings {
  log: OperatorLog;
  env: NodeJS.ProcessEnv;
  io: SessionIo;
  /**
   * Makes the shutdown out of its steps: installShutdown in `symbi mcp` (signals, the process's
   * exit code); orderlyShutdown for a session that runs inside a test process.
   */
  shutdownWith: (deps: ShutdownDependencies) => (cause: string) => Promise<unknown>;
}

/** A session serving on its streams, and how it ends. */
export interface AssembledSession {
  /** Resolves with the reason once the session has closed. */
  closed: Promise<string>;
  /** Ends the session: every run finalised (or said not to be) and every request read answered. */
  shutdown: (cause: string) => Promise<unknown>;
}

/**
 * Everything `symbi mcp` serves with, wired once: the startup snapshot of `project`, the DSL
 * analysis, the invoke_agent backend and tool, the MCP session on `surroundings.io`, the
 * summaries and the shutdown. runMcpServer adds what belongs to the process (the console,
 * standard error, signals, standard input and output); test/support/in-process-server.ts
 * runs the same session inside a test process.
 */
export async function assembleSession(
  project: PinnedDirectory,
  options: Omit<McpCommandOptions, 'project' | 'logFormat'>,
  surroundings: SessionSurroundings,
): Promise<AssembledSession> {
  const { log, env, io } = surroundings;
  const { snapshot, auditStorage, changeReference } = takeStartupSnapshot(project);
  // The analysis thread starts with the first DSL text to analyse: the startup
  // analysis after the handshake, or an earlier parse_dsl or list_agents.
  const dslAnalysis = new DslAnalysisPool({ log });
  let sources: Promise<SourceAnalysis> | undefined;
  const sourceAnalysis = (): Promise<SourceAnalysis> => (sources ??= analyseSources(snapshot, dslAnalysis));
  const context: SessionContext = { project, snapshot, log, auditStorage, dslAnalysis, sourceAnalysis };
  const runtime = createInvokeAgentBackend(context, options.maxInvocations, env);
  const statistics = new RunStatistics(options.maxInvocations);
  runtime.session.statistics = statistics;
  const intervalSummaries =
    options.summaryIntervalMs > 0
      ? setInterval(() => {
          if (statistics.changedSinceSummary()) statistics.writeSummary(log, 'interval');
        }, options.summaryIntervalMs).unref()
      : undefined;
  let shutdown: ((cause: string) => Promise<unknown>) | undefined;
  // The summary (which parses every agent source) comes once the client has
  // completed the handshake, so its initialize is answered without waiting for
  // it; a client that never initializes gets it shortly after. The worker
  // threads start then too (see invoke-agent-backend.ts).
  let summaryWritten: Promise<void> | undefined;
  // The change watch's stop, once it has started: shutdown ends it with the threads, so a session
  // served in a longer-lived process (the tests' in-process sessions) leaves no watcher behind.
  let stopWatch: (() => void) | undefined;
  const summaryOnce = (): Promise<void> => {
    if (summaryWritten === undefined) writeProjectSummary(snapshot, log);
    return (summaryWritten ??= sourceAnalysis().then(async (analysis) => {
      const standings = new Map(
        (await agentStandings({ projectAccess: snapshot.projectAccess, policySet: snapshot.policy.set }, analysis.agents)).map((s) => [s.summary, s.refusal]),
      );
      writeStartupSummary(snapshot, analysis, log, (agent) => {
        const refusal = standings.get(agent);
        return refusal === undefined ? undefined : refusalText(refusal);
      });
      writeProviderSummary(runtime.session.provider, log);
      // From here on, an edit to what the snapshot was read from is said once (project-change-watch.ts),
      // compared with what the snapshot read, so an edit made since (while the agents were analysed) is named too.
      stopWatch = watchProjectChanges(project, log, { reference: changeReference, env });
      log.info('serving MCP on standard input/output', { event: 'startup.serving' });
    }));
  };
  const afterHandshake = (): void => {
    void summaryOnce();
    runtime.warmUp();
  };
  const session = await startMcpSession(context, io, {
    registerInvokeAgent: invokeAgentRegistrar(runtime.session),
    onInputEnd: () => void shutdown?.('the client closed standard input'),
    onClientReady: afterHandshake,
    env,
  });
  const ending = surroundings.shutdownWith({
    owners: runtime.owners,
    requests: session.requests,
    graceMs: options.shutdownGraceMs,
    log,
    closeSession: () => session.closeSession('shutting down'),
    outputFlushed: () => outputFlushed(io.stdout),
    stopWorkers: async () => {
      stopWatch?.();
      await dslAnalysis.close();
      await runtime.stopWorkers();
    },
    // Standard error always starts with the summary, even for a session that ends at once;
    // from shutdown on, the only summary is the last one.
    beforeDrain: () => {
      clearInterval(intervalSummaries);
      return summaryOnce();
    },
    summary: () => statistics.writeSummary(log, 'shutdown'),
  });
  shutdown = ending;
  setTimeout(afterHandshake, HANDSHAKE_WAIT_MS).unref();
  return { closed: session.closed, shutdown: ending };
}

/** `symbi mcp` itself: pins the project, takes the snapshot, serves stdio MCP and shuts down with every run finalised. */
/**
 * Keeps SIGUSR1 from opening Node's inspector on 127.0.0.1:9229, where any
 * local user could read process.env (the provider key) and run code as the
 * server. A JavaScript listener replaces Node's own handler for the signal
 * (libuv installs its sigaction over it), on every Node line served; Node 20
 * has no --disable-sigusr1. The listener stays for the life of the process:
 * removing it would leave SIGUSR1's default action, which ends the process.
 */
function keepInspectorClosed(): (log: OperatorLog) => void {
  let logTo: OperatorLog | undefined;
  process.on('SIGUSR1', () => {
    logTo?.info('SIGUSR1 ignored: this server never opens the Node.js inspector', { event: 'signal.ignored', signal: 'SIGUSR1' });
  });
  return (log) => {
    logTo = log;
  };
}

export async function runMcpServer(options: McpCommandOptions): Promise<void> {
  // First, so that no moment of startup is open to it.
  const reportSigusr1To = keepInspectorClosed();
  keepConsoleOffStdout();
  preferSmallHeaps();
  const project = pinProjectOption(options.project, 'mcp');
  const secrets = configuredSecrets(process.env);
  const log = createOperatorLog(options.logFormat, secrets);
  captureStandardError(log, secrets);
  reportSigusr1To(log);
  const session = await assembleSession(project, options, {
    log,
    env: process.env,
    io: { stdin: process.stdin, stdout: process.stdout },
    shutdownWith: installShutdown,
  });
  const reason = await session.closed;
  // However the session ended, live runs still get their terminal records before exit.
  await session.shutdown(`session closed: ${reason}`);
}

/** Adds `symbi mcp` and its options to the command line. */
export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description('Serve the governed MCP server over stdio for the project directory')
    .addOption(new Option('--project <dir>', 'project directory to pin (default: the current directory)').default('.'))
    .addOption(new Option('--log-format <format>', `standard error format: ${LOG_FORMATS.join(' or ')}`).default('text'))
    .addOption(
      new Option('--shutdown-grace-ms <ms>', 'how long shutdown waits for live runs to record their end and for every request read to be answered').default(
        String(SHUTDOWN_GRACE_MS_DEFAULT),
      ),
    )
    .addOption(
      new Option(
        '--max-invocations <n>',
        'invoke_agent calls in progress at once that their callers still wait on; more are refused at once as "at capacity"',
      ).default(String(INVOCATIONS_MAX_DEFAULT)),
    )
    .addOption(
      new Option(
        '--summary-interval <minutes>',
        'minutes between summaries on standard error while runs happen, or seconds with an s suffix such as 30s (0: only at shutdown)',
      ).default(String(SUMMARY_INTERVAL_DEFAULT_MINUTES)),
    )
    .exitOverride((err: CommanderError) => {
      // Commander's own usage errors (unknown option, missing value) share the usage exit code.
      process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
    })
    .action(async (raw: { project: string; logFormat: string; shutdownGraceMs: string; maxInvocations: string; summaryInterval: string }) => {
      await runMcpServer({
        project: raw.project,
        logFormat: parseLogFormat(raw.logFormat),
        shutdownGraceMs: parseGrace(raw.shutdownGraceMs),
        maxInvocations: parseMaxInvocations(raw.maxInvocations),
        summaryIntervalMs: parseSummaryInterval(raw.summaryInterval),
      });
    });
}

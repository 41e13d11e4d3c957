import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { Piscina as PiscinaPool } from 'piscina';
import { isWorkerOutput, type SandboxedThreadData } from '../../shared/worker-protocol.js';
import type { OperatorLog } from '../operator/operator-log.js';
import { THREAD_SANDBOX_MODULE } from '../../shared/worker-modules.js';

// Every worker thread the server starts is made here, so that each one, of
// every kind, gets the whole sandbox and a new kind cannot forget part of it
// (test/process/worker-sandbox.test.ts fails on a `new Worker` or `new Piscina`
// anywhere else in src/):
//
// - an empty environment: unrelated secrets in the IDE's environment, and the
//   provider variables, stay in the supervisor thread (a thread gets what it
//   needs as data). A thread reads NODE_OPTIONS from its own environment, so
//   a preload named there runs in the supervisor thread only;
// - its kind's resource limits: a thread past them ends alone;
// - standard output kept off the MCP channel: thread-sandbox.ts is the
//   thread's first module, ahead of the task module and of any preload named
//   on node's command line (a `--require` preload is loaded as an `--import`
//   after it, because Node.js runs every `--require` before any `--import`);
//   it takes process.stdout and the fs routes to descriptor 1 over, and what
//   it catches is said on standard error here.

/** What a thread is for; named on standard error beside what it wrote. */
export type ThreadKind = 'invocation' | 'analysis';

export interface ThreadSandbox {
  kind: ThreadKind;
  resourceLimits: ResourceLimits;
  /** Strings never shown, even inside a line the thread wrote (the provider key). */
  redact?: readonly string[];
  log: OperatorLog;
}

// Piscina's option type is not exported; it is read from the constructor.
export type PiscinaOptions = NonNullable<ConstructorParameters<typeof PiscinaPool>[0]>;

/**
 * How long stopping a thread waits for it to finish loading its modules. Node.js can end the
 * whole process in a V8 fatal error, not its exit code, when a thread is terminated while it
 * loads them (a test saw it at shutdown, a thread having started just before), so the pools
 * let a loading thread finish first, within this bound.
 */
export const THREAD_LOADING_WAIT_MS = 5_000;

/** What a pool's caller chooses; the sandbox sets the rest. */
export type SandboxedPoolOptions = Omit<PiscinaOptions, 'env' | 'execArgv' | 'resourceLimits' | 'workerData'>;

/**
 * Starts one worker thread running `entry`, with `data` as what the entry reads from workerData's `task`.
 * Throws when the thread cannot start; the caller refuses the work that needed it.
 */
export function startSandboxedThread(entry: URL, sandbox: ThreadSandbox, data?: unknown): Worker {
  const worker = withThreadNodeOptions(sandbox.log, (execArgv) => new Worker(entry, sandboxOptions(sandbox, data, execArgv)));
  sayCapturedOutput(worker, sandbox);
  return worker;
}

/**
 * Starts a piscina pool whose every thread is sandboxed; `data` is what each thread reads from workerData's `task`.
 * Throws when its first thread cannot start; the caller refuses the work that needed it.
 */
export function startSandboxedPool(options: SandboxedPoolOptions, sandbox: ThreadSandbox, data?: unknown): PiscinaPool {
  // Required on first use so that startup (the initialize answer) does not load piscina.
  const { Piscina } = createRequire(import.meta.url)('piscina') as typeof import('piscina');
  // piscina starts the pool's first thread in its constructor, so a refused option throws here.
  const pool = withThreadNodeOptions(sandbox.log, (execArgv) => new Piscina({ ...options, ...sandboxOptions(sandbox, data, execArgv) }));
  sayCapturedOutput(pool, sandbox);
  return pool;
}

function sandboxOptions(sandbox: ThreadSandbox, data: unknown, execArgv: string[]) {
  const workerData: SandboxedThreadData<unknown> = { sandbox: { redact: [...(sandbox.redact ?? [])] }, task: data };
  return { env: {}, execArgv, resourceLimits: sandbox.resourceLimits, workerData };
}

// A client may start the server as `node --max-old-space-size=4096 bin/symbi.js mcp` (or with
// --expose-gc, --stack-size=..., --jitless, ...). Node.js refuses V8 flags and process-wide
// options in a thread's execArgv: the Worker constructor throws ERR_WORKER_INVALID_EXEC_ARGV,
// naming them, before any thread exists. Which options Node.js takes for threads differs between
// its versions and is not exposed, so the first thread is started with all of the process's
// options and, when Node.js refuses some, again without those it named; the options that worked
// are kept for every later thread, and the ones left out are said once on standard error. V8
// flags still apply to the whole process (V8 reads them once); the threads' heap and stack are
// set by their resource limits.

/** The node options every thread starts with, once the first thread has started with them. */
let acceptedThreadOptions: string[] | undefined;

/** Runs `start` with the node options a thread can take; see above. */
function withThreadNodeOptions<T>(log: OperatorLog, start: (execArgv: string[]) => T): T {
  if (acceptedThreadOptions !== undefined) return start(acceptedThreadOptions);
  const wanted = threadExecArgv(process.execArgv);
  let started: T;
  try {
    started = start(wanted);
    acceptedThreadOptions = wanted;
    return started;
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    const { kept, leftOut } = withoutRefusedOptions(wanted, (err as Error).message);
    started = start(kept);
    acceptedThreadOptions = kept;
    log.warn(
      `node options left out of the worker threads (Node.js does not take them for a thread; V8 flags still apply to the whole process): ${leftOut.join(' ')}`,
      {
        event: 'worker.node_options',
        left_out: leftOut.join(' '),
      },
    );
    return started;
  }
}

/** The sandbox's own options at the head of every thread's (threadExecArgv), which Node.js takes on every supported line. */
const SANDBOX_OPTION_COUNT = 3;

/**
 * `argv` without the options Node.js named in its ERR_WORKER_INVALID_EXEC_ARGV `message`
 * ("Initiated Worker with invalid execArgv flags: --a=1, --b"), each with its separate value if it
 * has one. When the message names none of them (a Node.js that words it otherwise), every option
 * of the process is left out, so the thread still starts.
 */
export function withoutRefusedOptions(argv: readonly string[], message: string): { kept: string[]; leftOut: string[] } {
  const named = new Set((/invalid execArgv flags: (.*)$/s.exec(message)?.[1] ?? '').split(', ').filter((name) => name.length > 0));
  const own = argv.slice(0, SANDBOX_OPTION_COUNT);
  const rest = argv.slice(SANDBOX_OPTION_COUNT);
  if (!rest.some((arg) => named.has(arg))) return { kept: own, leftOut: rest };
  const kept = [...own];
  const leftOut: string[] = [];
  for (let i = 0; i < rest.length; i += 1) {
    const arg = rest[i]!;
    if (!named.has(arg)) {
      kept.push(arg);
      continue;
    }
    leftOut.push(arg);
    // In execArgv, an element that is not an option is the value of the option before it (`--title x`).
    const next = rest[i + 1];
    if (!arg.includes('=') && next !== undefined && !next.startsWith('-')) leftOut.push(rest[(i += 1)]!);
  }
  return { kept, leftOut };
}

/** What a thread wrote to its standard output (worker-stdout.ts), said on standard error instead. */
function sayCapturedOutput(source: Worker | PiscinaPool, sandbox: ThreadSandbox): void {
  source.on('message', (message: unknown) => {
    if (!isWorkerOutput(message)) return;
    sandbox.log.warn('a worker thread wrote to standard output (kept off the MCP channel)', {
      event: 'worker.stdout',
      thread: sandbox.kind,
      line: message.line,
    });
  });
}

/**
 * Node.js options that apply to the whole process, which a Worker given them in its execArgv
 * refuses (ERR_WORKER_INVALID_EXEC_ARGV), and whether each takes a value. Node 24's test runner,
 * for one, starts each test process with many of them spelled out.
 */
const PROCESS_WIDE_OPTIONS: ReadonlyMap<string, 'flag' | 'value'> = new Map([
  ['--stack-trace-limit', 'value'],
  ['--secure-heap', 'value'],
  ['--secure-heap-min', 'value'],
  ['--v8-pool-size', 'value'],
  ['--trace-event-categories', 'value'],
  ['--trace-event-file-pattern', 'value'],
  ['--tls-cipher-list', 'value'],
  ['--use-largepages', 'value'],
  ['--title', 'value'],
  ['--openssl-config', 'value'],
  ['--icu-data-dir', 'value'],
  ['--snapshot-blob', 'value'],
  ['--node-snapshot', 'flag'],
  ['--no-node-snapshot', 'flag'],
  ['--build-snapshot', 'flag'],
  ['--use-openssl-ca', 'flag'],
  ['--use-bundled-ca', 'flag'],
  ['--enable-fips', 'flag'],
  ['--force-fips', 'flag'],
  ['--zero-fill-buffers', 'flag'],
  ['--v8-options', 'flag'],
]);

/**
 * The node options a thread starts with: thread-sandbox.ts first, then the process's own, each
 * `--require` preload turned into an `--import` of the file it names (resolved as Node.js resolved
 * it at startup, from the working directory, which the server never changes).
 */
export function threadExecArgv(parent: readonly string[]): string[] {
  const preloads = createRequire(path.join(process.cwd(), '[preload]'));
  const asImport = (specifier: string): string => {
    const resolved = preloads.resolve(specifier);
    return path.isAbsolute(resolved) ? pathToFileURL(resolved).href : resolved;
  };
  // piscina loads a thread's task module with require() first and import() only if that fails. On
  // Node.js lines where require() loads ES modules, a server that exited while a thread was doing so
  // ended in a V8 fatal error (IsGraphAsync on a module not instantiated, seen in a test run);
  // with require(esm) off in the threads, piscina goes straight to import().
  const argv = ['--no-experimental-require-module', '--import', THREAD_SANDBOX_MODULE.href];
  for (let i = 0; i < parent.length; i += 1) {
    const arg = parent[i]!;
    const name = arg.split('=', 1)[0]!;
    if (PROCESS_WIDE_OPTIONS.has(name)) {
      // Already in force for the whole process; a Worker given one explicitly refuses to start.
      if (!arg.includes('=') && PROCESS_WIDE_OPTIONS.get(name) === 'value') i += 1;
      continue;
    }
    const joined = /^--require=(.*)$/s.exec(arg)?.[1];
    if (joined !== undefined) argv.push('--import', asImport(joined));
    else if ((arg === '--require' || arg === '-r') && i + 1 < parent.length) argv.push('--import', asImport(parent[(i += 1)]!));
    else argv.push(arg);
  }
  return argv;
}

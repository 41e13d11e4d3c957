import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import type { Piscina as PiscinaPool } from 'piscina';
import { WORKER_OUTPUT_MESSAGE, type WorkerBootData, type WorkerOutputMessage } from '../shared/run-messages.js';
import type { OperatorLog } from './operator-log.js';

// Runs spend nearly all their time waiting on the provider, so each worker
// thread carries many concurrent tasks. Atomics are disabled because an idle
// worker blocked in Atomics.wait would stall the event loop those tasks need.
const TASKS_PER_WORKER = 512;

// Each worker thread is a sandbox with its own heap limit: a thread that
// exceeds it ends with ERR_WORKER_OUT_OF_MEMORY, each of its runs is finished
// by its owner (run-owners.ts), piscina starts a replacement thread, and the
// supervisor and the other threads carry on. Without a limit, one thread could
// grow until the operating system kills the whole server.
//
// Sized from scripts/measure-worker-memory.ts on Node.js 20 (README, "Worker
// sandbox"): a thread with Cedar loaded and nothing running holds 7.4 MiB of
// heap; 512 runs waiting on the provider with 1 MiB typed requests each keep
// 1,482 MiB alive after a full GC (about 2.9 MiB per run: the definition, the
// conversation and the request body while it is sent); each 4 MiB response
// being processed adds about 4.6 MiB (32 at once peaked at 162 MiB). The old
// generation gets 2 GiB: the 512-run case at the specification's limits plus
// about 550 MiB for responses in flight and for V8 to collect in (under a
// 1.5 GiB limit that case survived with 45 MiB to spare).
// The young generation is small (3 MiB: 1 MiB semi-spaces instead of V8's
// default of up to 16 MiB): a run allocates little that lives long, it costs no
// measurable throughput and keeps each thread's heap small (over a 3,000-call
// soak the server's peak RSS was 220 MB with it and 272 MB without, at the
// same call rate; scripts/soak.ts). The stack keeps Node.js's 4 MiB: no
// worker code recurses on input depth (JSON.parse is iterative, Cedar runs in
// WebAssembly with its own stack). Buffers and WebAssembly memory are outside
// these limits (the 1 MiB request and 4 MiB response caps bound them).
export const WORKER_RESOURCE_LIMITS = {
  maxOldGenerationSizeMb: 2048,
  maxYoungGenerationSizeMb: 3,
  stackSizeMb: 4,
} as const;

// Workers get an empty environment: the provider configuration they use was
// read by the supervisor at startup and travels in the boot data, so nothing
// a run needs is in process.env, and unrelated secrets in the IDE's
// environment stay in the supervisor thread. (Node.js reads its own process-wide
// settings, such as NODE_EXTRA_CA_CERTS, in the main thread at process start.)
const WORKER_ENVIRONMENT: Readonly<Record<string, string>> = Object.freeze({});

export function createInvocationPool(boot: WorkerBootData, log: OperatorLog): PiscinaPool {
  // Required on first use so that startup (the initialize answer) does not load the pool.
  const { Piscina } = createRequire(import.meta.url)('piscina') as typeof import('piscina');
  const threads = Math.max(1, Math.min(4, availableParallelism()));
  const pool = new Piscina({
    filename: new URL('../worker/invoke-task.js', import.meta.url).href,
    workerData: boot,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: TASKS_PER_WORKER,
    atomics: 'disabled',
    idleTimeout: 60_000,
    resourceLimits: WORKER_RESOURCE_LIMITS,
    env: { ...WORKER_ENVIRONMENT },
    // Journal descriptors come from the confinement route (openat through koffi on most systems),
    // which Node's per-thread descriptor tracking never saw open: with tracking on, each close
    // puts a "closed but not opened" warning on standard error. The journal writer closes its own.
    trackUnmanagedFds: false,
  });
  // What a worker wrote to its standard output (worker-stdout.ts), said on standard error instead.
  pool.on('message', (message: unknown) => {
    if (!isWorkerOutput(message)) return;
    log.warn('a worker thread wrote to standard output (kept off the MCP channel)', { event: 'worker.stdout', line: message.line });
  });
  return pool;
}

function isWorkerOutput(message: unknown): message is WorkerOutputMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === WORKER_OUTPUT_MESSAGE && typeof (message as { line?: unknown }).line === 'string';
}

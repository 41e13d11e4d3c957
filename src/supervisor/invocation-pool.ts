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
// supervisor and the other threads never notice. Without a limit, one thread
// could grow until the operating system kills the whole server.
//
// Sized from scripts/measure-worker-memory.ts (README, "Worker sandbox"): on
// Node.js 20 a thread with Cedar loaded and nothing running uses about
// WORKER_HEAP_MEASURED_IDLE_MB of heap; 512 concurrent runs with 1 MiB typed requests
// waiting on the provider peak at about WORKER_HEAP_MEASURED_512_MB; one run that
// receives a 4 MiB response peaks about WORKER_HEAP_MEASURED_PER_4MIB_MB above idle.
export const WORKER_RESOURCE_LIMITS = {
  maxOldGenerationSizeMb: 1024,
  maxYoungGenerationSizeMb: 64,
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

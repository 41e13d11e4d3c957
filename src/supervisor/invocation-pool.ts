import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import type { Piscina as PiscinaPool } from 'piscina';
import { isWorkerBooted, WORKER_IDLE_TIMEOUT_MS, WORKER_OUTPUT_MESSAGE, type WorkerBootData, type WorkerOutputMessage } from '../shared/worker-protocol.js';
import { returnFreedMemoryToSystem } from './heap-footprint.js';
import type { OperatorLog } from './operator-log.js';

// Piscina's option type is not exported; its balancer type is read from the constructor.
type PiscinaLoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof PiscinaPool>[0]>['loadBalancer']>;

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
// The old generation is sized for the worst case the specification allows:
// TASKS_PER_WORKER runs waiting on the provider, each holding a typed request
// at its limit, plus responses at their limit being processed, with room for V8
// to collect in (scripts/bench/measure-worker-memory.ts measures that case). The young
// generation is small: a run allocates little that lives long, and small semi-spaces
// keep each thread's heap, and so the server's RSS, near its live size. The stack
// keeps Node.js's default: no worker code recurses on input depth (JSON.parse is
// iterative, Cedar runs in WebAssembly with its own stack). Buffers and WebAssembly
// memory are outside these limits (the request and response caps bound them).
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

/**
 * Starts the pool with one thread; each further thread (up to one per core, at most four)
 * starts when a run arrives while every running thread already has one, and stops again after
 * a minute without work. A session that invokes one agent at a time keeps one thread's memory.
 */
export function createInvocationPool(boot: WorkerBootData, log: OperatorLog): PiscinaPool {
  // Required on first use so that startup (the initialize answer) does not load the pool.
  const { Piscina } = createRequire(import.meta.url)('piscina') as typeof import('piscina');
  const threads = Math.max(1, Math.min(4, availableParallelism()));
  const pool = new Piscina({
    filename: new URL('../worker/invoke-task.js', import.meta.url).href,
    workerData: boot,
    minThreads: 1,
    maxThreads: threads,
    loadBalancer: spreadBeforeSharing(threads),
    concurrentTasksPerWorker: TASKS_PER_WORKER,
    atomics: 'disabled',
    // Piscina's run and wait time histograms: nothing here reads them, and each run would record into them.
    recordTiming: false,
    idleTimeout: WORKER_IDLE_TIMEOUT_MS,
    resourceLimits: WORKER_RESOURCE_LIMITS,
    env: { ...WORKER_ENVIRONMENT },
    // Journal descriptors come from the confinement route (openat through koffi on most systems),
    // which Node's per-thread descriptor tracking never saw open: with tracking on, each close
    // puts a "closed but not opened" warning on standard error. The journal writer closes its own.
    trackUnmanagedFds: false,
  });
  // What a worker wrote to its standard output (worker-stdout.ts), said on standard error instead.
  pool.on('message', (message: unknown) => {
    // Through koffi, which the proc route never loads: there the trim would cost more than it frees.
    if (isWorkerBooted(message) && boot.confinementRoute !== 'proc') returnFreedMemoryToSystem();
    if (!isWorkerOutput(message)) return;
    log.warn('a worker thread wrote to standard output (kept off the MCP channel)', { event: 'worker.stdout', line: message.line });
  });
  return pool;
}

/**
 * Piscina's balancer: an idle thread if there is one; else, while the pool may grow, none (piscina
 * then starts a thread); else the least busy thread with room. A null answer queues the run
 * until a thread is free or ready.
 */
function spreadBeforeSharing(maxThreads: number): PiscinaLoadBalancer {
  return (_task, workers) => {
    let leastBusy: (typeof workers)[number] | null = null;
    for (const worker of workers) {
      if (worker.currentUsage === 0) return worker;
      if (worker.currentUsage < TASKS_PER_WORKER && (leastBusy === null || worker.currentUsage < leastBusy.currentUsage)) leastBusy = worker;
    }
    return workers.length < maxThreads ? null : leastBusy;
  };
}

function isWorkerOutput(message: unknown): message is WorkerOutputMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === WORKER_OUTPUT_MESSAGE && typeof (message as { line?: unknown }).line === 'string';
}

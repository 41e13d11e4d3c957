import { availableParallelism } from 'node:os';
import type { Piscina as PiscinaPool } from 'piscina';
import { isWorkerBooted, WORKER_IDLE_TIMEOUT_MS, type WorkerBootData } from '../../shared/worker-protocol.js';
import { returnFreedMemoryToSystem } from './heap-footprint.js';
import type { OperatorLog } from '../operator/operator-log.js';
import { startSandboxedPool, THREAD_LOADING_WAIT_MS, type PiscinaOptions } from './sandboxed-thread.js';
import { INVOKE_TASK_MODULE } from '../../shared/worker-modules.js';

type PiscinaLoadBalancer = NonNullable<PiscinaOptions['loadBalancer']>;

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

/**
 * Starts the pool with one thread; each further thread (up to one per core, at most four)
 * starts when a run arrives while every running thread already has one, and stops again after
 * a minute without work. A session that invokes one agent at a time keeps one thread's memory.
 */
export function createInvocationPool(boot: WorkerBootData, log: OperatorLog): PiscinaPool {
  const threads = Math.max(1, Math.min(4, availableParallelism()));
  // The provider configuration a run needs was read by the supervisor at startup and travels in
  // the boot data, so the sandbox's empty environment takes nothing a run needs.
  const pool = startSandboxedPool(
    {
      filename: INVOKE_TASK_MODULE.href,
      minThreads: 1,
      maxThreads: threads,
      loadBalancer: spreadBeforeSharing(threads),
      concurrentTasksPerWorker: TASKS_PER_WORKER,
      atomics: 'disabled',
      // Piscina's run and wait time histograms: nothing here reads them, and each run would record into them.
      recordTiming: false,
      idleTimeout: WORKER_IDLE_TIMEOUT_MS,
      // Journal descriptors come from the confinement route (openat through koffi on most systems),
      // which Node's per-thread descriptor tracking never saw open: with tracking on, each close
      // puts a "closed but not opened" warning on standard error. The journal writer closes its own.
      trackUnmanagedFds: false,
    },
    { kind: 'invocation', resourceLimits: WORKER_RESOURCE_LIMITS, redact: [boot.provider.apiKey], log },
    boot,
  );
  const booted = new Set<number>();
  bootedThreads.set(pool, booted);
  pool.on('message', (message: unknown) => {
    if (!isWorkerBooted(message)) return;
    booted.add(message.threadId);
    // Through koffi, which the proc route never loads: there the trim would cost more than it frees.
    if (boot.confinementRoute !== 'proc') returnFreedMemoryToSystem();
  });
  return pool;
}

/** The ids of each pool's threads whose task module has finished loading. */
const bootedThreads = new WeakMap<PiscinaPool, Set<number>>();

/** Ends the pool's threads once none is still loading its modules (THREAD_LOADING_WAIT_MS says why). */
export async function stopInvocationPool(pool: PiscinaPool): Promise<void> {
  const booted = bootedThreads.get(pool) ?? new Set<number>();
  const giveUpAt = performance.now() + THREAD_LOADING_WAIT_MS;
  while (pool.threads.some((thread) => !booted.has(thread.threadId)) && performance.now() < giveUpAt) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await pool.destroy();
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

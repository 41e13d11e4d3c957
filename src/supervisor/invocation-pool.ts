import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import type { Piscina as PiscinaPool } from 'piscina';
import type { WorkerBootData } from '../shared/run-messages.js';

// Runs spend nearly all their time waiting on the provider, so each worker
// thread carries many concurrent tasks. Atomics are disabled because an idle
// worker blocked in Atomics.wait would stall the event loop those tasks need.
const TASKS_PER_WORKER = 512;

export function createInvocationPool(boot: WorkerBootData): PiscinaPool {
  // Required on first use so that startup (the initialize answer) does not load the pool.
  const { Piscina } = createRequire(import.meta.url)('piscina') as typeof import('piscina');
  const threads = Math.max(1, Math.min(4, availableParallelism()));
  return new Piscina({
    filename: new URL('../worker/invoke-task.js', import.meta.url).href,
    workerData: boot,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: TASKS_PER_WORKER,
    atomics: 'disabled',
    idleTimeout: 60_000,
  });
}

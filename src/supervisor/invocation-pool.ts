import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import type { Piscina as PiscinaPool } from 'piscina';
import type { WorkerBootData } from '../shared/run-messages.js';

// Runs spend nearly all their time waiting on the provider, so each worker
// thread carries many concurrent tasks. Atomics are disabled because an idle
// worker blocked in Atomics.wait would stall the event loop those tasks need.
const TASKS_PER_WORKER = 512;
// A run allocates little that lives long, so a small young generation (1 MB semi-spaces instead
// of V8's default of up to 16 MB) costs no measurable throughput and keeps each thread's heap
// small: over a 3,000-call soak the server's peak RSS was 220 MB with it and 272 MB without,
// at the same call rate (scripts/soak.ts).
const WORKER_YOUNG_GENERATION_MB = 3;

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
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
  });
}

// How much heap a worker thread needs at the specification's limits, to size
// WORKER_RESOURCE_LIMITS (src/supervisor/threads/invocation-pool.ts).
//
// Usage: npm run build; node --expose-gc --import tsx scripts/bench/measure-worker-memory.ts [--check] [--only=0,2]
//
// One worker thread runs the real invocation code (journal, provider call over
// node:http to the local synthetic endpoint, Cedar on the exact text) for each
// scenario, and samples its own V8 heap every millisecond and at every run
// phase. Reported: heap in use after a full GC before the scenario, and the
// highest heap in use seen during it (garbage not yet collected included, so
// the figure is an upper bound of what the scenario needs). With --check the
// same thread runs under WORKER_RESOURCE_LIMITS and the script says whether
// every scenario survived. Prints a last BENCH_JSON line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const MIB = 1024 * 1024;
/** Leaves room for the conversation's framing so the typed request stays just under 1 MiB. */
const LARGE_DECLARATION_BYTES = MIB - 70 * 1024;
const LARGE_PROMPT_BYTES = 60 * 1024;
/** An answer whose typed response (canonical JSON) stays just under 4 MiB. */
const LARGE_ANSWER_BYTES = 4 * MIB - 4 * 1024;

interface Scenario {
  name: string;
  runs: number;
  largeRequest: boolean;
  largeResponse: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: '512 concurrent runs, small request and response', runs: 512, largeRequest: false, largeResponse: false },
  { name: '512 concurrent runs, 1 MiB typed requests', runs: 512, largeRequest: true, largeResponse: false },
  { name: '1 run, 4 MiB typed response', runs: 1, largeRequest: false, largeResponse: true },
  { name: '16 concurrent runs, 4 MiB typed responses', runs: 16, largeRequest: false, largeResponse: true },
  { name: '32 concurrent runs, 4 MiB typed responses', runs: 32, largeRequest: false, largeResponse: true },
];

interface ScenarioResult {
  name: string;
  baselineMb: number;
  /** Heap in use after a full GC once every run of the scenario is waiting on the provider. */
  heldLiveMb: number;
  peakUsedMb: number;
  peakExternalMb: number;
  completed: number;
  failed: number;
}

await main();

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    process.stderr.write('run with node --expose-gc --import tsx scripts/bench/measure-worker-memory.ts\n');
    process.exit(2);
  }
  const { WORKER_RESOURCE_LIMITS } = await import('../../src/supervisor/threads/invocation-pool.js');
  // A fresh endpoint for each scenario: a keep-alive socket left from the one
  // before could be closed by the server just as it is reused.
  const warmUp = await startSyntheticEndpoint();
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-measure-memory-'));
  // tsx's loader does not reach a worker thread on Node.js 20, so the thread is plain JavaScript over dist/.
  const worker = new Worker(new URL('./measure-worker-memory-thread.mjs', import.meta.url), {
    workerData: { project, warmUpUrl: warmUp.url, declarationBytes: LARGE_DECLARATION_BYTES, promptBytes: LARGE_PROMPT_BYTES },
    ...(check ? { resourceLimits: WORKER_RESOURCE_LIMITS } : {}),
  });
  let exitError: Error | undefined;
  worker.on('error', (err) => (exitError = err));
  const results: ScenarioResult[] = [];
  let current: SyntheticEndpoint | undefined;
  try {
    const idle = await ask<{ idleMb: number }>(worker, { type: 'idle' });
    process.stdout.write(`worker thread idle, Cedar loaded, after a warm-up run and a full GC: ${idle.idleMb} MiB heap in use\n`);
    const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
    const chosen = only === undefined ? SCENARIOS : only.split(',').map((i) => SCENARIOS[Number(i)]!);
    for (const scenario of chosen) {
      const endpoint = await startSyntheticEndpoint(scenario.largeResponse ? { answer: 'x'.repeat(LARGE_ANSWER_BYTES) } : {});
      current = endpoint;
      const seen = endpoint.requests.length;
      const done = ask<ScenarioResult>(worker, { type: 'scenario', scenario, url: endpoint.url });
      // Every run holds at the endpoint first, so all of them are in flight at once;
      // then they are released (again and again, for requests still being read).
      // (A connection the endpoint's listen backlog refuses ends its run early: stop waiting when arrivals stall.)
      await Promise.race([allArrived(endpoint, seen + scenario.runs), done]);
      const releaser = setInterval(() => endpoint.releaseAll(), 50);
      const result = await done.finally(() => clearInterval(releaser));
      await endpoint.close();
      current = undefined;
      results.push(result);
      process.stdout.write(
        `${result.name}: heap before ${result.baselineMb} MiB, live while all wait on the provider ${result.heldLiveMb} MiB, peak in use ${result.peakUsedMb} MiB ` +
          `(external ${result.peakExternalMb} MiB); ${result.completed} completed, ${result.failed} failed\n`,
      );
    }
    if (check) process.stdout.write(`every scenario survived under ${JSON.stringify(WORKER_RESOURCE_LIMITS)}\n`);
    process.stdout.write(
      `BENCH_JSON ${JSON.stringify({ node: process.version, check, limits: check ? WORKER_RESOURCE_LIMITS : null, idleMb: idle.idleMb, results })}\n`,
    );
  } catch (err) {
    const reason = exitError ?? err;
    process.stdout.write(`the worker thread did not survive: ${(reason as Error).message} (${(reason as NodeJS.ErrnoException).code ?? 'no code'})\n`);
    process.exitCode = 1;
  } finally {
    await worker.terminate();
    await warmUp.close();
    if (current !== undefined) {
      current.releaseAll();
      await current.close();
    }
    fs.rmSync(project, { recursive: true, force: true });
  }
}

async function allArrived(endpoint: SyntheticEndpoint, target: number): Promise<void> {
  let last = -1;
  let stalledSince = Date.now();
  while (endpoint.requests.length < target) {
    if (endpoint.requests.length !== last) {
      last = endpoint.requests.length;
      stalledSince = Date.now();
    } else if (Date.now() - stalledSince > 3_000) {
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function ask<T>(worker: Worker, message: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (reply: T): void => {
      worker.off('exit', onExit);
      resolve(reply);
    };
    const onExit = (code: number): void => {
      worker.off('message', onMessage);
      reject(new Error(`worker exited with code ${code}`));
    };
    worker.once('message', onMessage);
    worker.once('exit', onExit);
    worker.postMessage(message);
  });
}

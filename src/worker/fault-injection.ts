import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { threadId } from 'node:worker_threads';
import { JournalHandover } from '../shared/journal/journal-handover.js';
import type { RunPhase } from '../shared/worker-protocol.js';
import type { PhaseHooks } from './invocation.js';

// Test-only: lets the suite prove what happens when a worker thread dies,
// stops responding, runs out of memory, writes to standard output or looks at
// the environment in the middle of a run. Active only when the operator sets
// SYMBI_FAULT_INJECTION (the supervisor hands the mode over in the boot data;
// workers get no environment) and the prompt carries the matching marker;
// otherwise it does nothing.

export interface FaultContext {
  /** The provider key this worker holds, so a stray-output fault can show that it never reaches standard error. */
  apiKey: string;
  /** The run's journal handover (journal-handover.ts), so a hang can keep the journal from its owner. */
  handover: SharedArrayBuffer;
}

/**
 * The fault hooks of a run, if its prompt carries the mode's marker: `beforeNotice` runs as a phase is
 * reached, before its progress notice leaves; `afterNotice` right after.
 */
export function faultHooks(mode: string | undefined, prompt: string, context: FaultContext): PhaseHooks | undefined {
  const afterNotice = afterNoticeHook(mode, prompt, context);
  // The hang holds the journal before the request_sent notice leaves: a test that has seen the notice
  // then knows no cancel can take the journal (held after it, the owner could win on a loaded machine).
  const beforeNotice =
    mode === 'worker-hang-after-request' && prompt.includes('[[fault:worker-hang]]')
      ? (phase: RunPhase) => {
          if (phase === 'request_sent') new JournalHandover(context.handover).hold();
        }
      : undefined;
  if (afterNotice === undefined && beforeNotice === undefined) return undefined;
  return { ...(beforeNotice !== undefined ? { beforeNotice } : {}), ...(afterNotice !== undefined ? { afterNotice } : {}) };
}

function afterNoticeHook(mode: string | undefined, prompt: string, context: FaultContext): ((phase: RunPhase) => void) | undefined {
  if (mode === 'worker-exit-after-request' && prompt.includes('[[fault:worker-exit]]')) {
    // process.exit() in a worker thread ends that thread only.
    return (phase) => {
      if (phase === 'request_sent') process.exit(1);
    };
  }
  if (mode === 'worker-hang-after-request' && prompt.includes('[[fault:worker-hang]]')) {
    // Blocks this worker thread for good without burning CPU, holding the run's journal (taken in
    // faultHooks' beforeNotice) as a write stuck on its way to the disk would: neither the worker nor
    // the owner can end the run.
    return (phase) => {
      if (phase === 'request_sent') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    };
  }
  if (mode === 'worker-hang-between-writes' && prompt.includes('[[fault:worker-hang]]')) {
    // Blocks this worker thread for good between two journal writes: a cancel can still end the
    // run from its owner.
    return (phase) => {
      if (phase === 'request_sent') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    };
  }
  if (mode === 'worker-out-of-memory' && prompt.includes('[[fault:worker-oom]]')) {
    // V8 heap arrays (800 KB each, straight into the large-object space), not
    // Buffers, which live outside the heap and its limit; kept reachable until
    // the thread's old generation is full.
    return (phase) => {
      if (phase !== 'request_sent') return;
      // Says which limit is about to be hit, so the test can tell the configured one from V8's default.
      fs.writeSync(2, `fault injection: worker heap limit ${Math.round(v8.getHeapStatistics().heap_size_limit / 1024 / 1024)} MiB\n`);
      const hoard: number[][] = [];
      for (let i = 0; ; i += 1) hoard.push(new Array<number>(100_000).fill(i + 0.5));
    };
  }
  if (mode === 'worker-stray-output' && prompt.includes('[[fault:worker-stdout]]')) {
    // Every path a library might use to print: console, the stream, descriptor 1.
    return (phase) => {
      if (phase !== 'request_sent') return;
      console.log('stray console.log from a worker');
      console.info('stray console.info from a worker');
      process.stdout.write('stray process.stdout.write from a worker\n');
      fs.writeSync(1, 'stray fs.writeSync(1) from a worker\n');
      process.stdout.write(`a library printing the provider key ${context.apiKey}\n`);
      for (let i = 0; i < 300; i += 1) console.log(`chatty line ${i} ${'x'.repeat(1000)}`);
    };
  }
  if (mode === 'worker-stderr-key' && prompt.includes('[[fault:worker-stderr-key]]')) {
    // A library printing the key on its standard error: split by a newline, and JSON-escaped.
    return (phase) => {
      if (phase !== 'request_sent') return;
      const half = Math.floor(context.apiKey.length / 2);
      console.error(`a library printing the split key ${context.apiKey.slice(0, half)}\n${context.apiKey.slice(half)} done`);
      process.stderr.write(`${JSON.stringify({ note: 'json-escaped key', key: `${context.apiKey.slice(0, half)}\n${context.apiKey.slice(half)}` })}\n`);
      // Two writes, one line each: the key's halves at the edges of two lines.
      process.stderr.write(`edge-split key ${context.apiKey.slice(0, half)}\n`);
      setTimeout(() => process.stderr.write(`${context.apiKey.slice(half)} edge-split end\n`), 50);
    };
  }
  if (mode === 'worker-report-environment' && prompt.includes('[[fault:worker-env]]')) {
    // Names only, never values: the test checks which variables a worker can see.
    return (phase) => {
      if (phase !== 'request_sent') return;
      const names = Object.keys(process.env).sort();
      fs.writeSync(2, `fault injection: worker environment names: ${JSON.stringify(names)}\n`);
    };
  }
  return undefined;
}

/** How long `worker-slow-load` makes a thread's task module take to load. */
const SLOW_LOAD_MS = 1500;

/**
 * Called once as the task module loads. `worker-slow-load` makes that take SLOW_LOAD_MS, so a test
 * can end the server while a thread is still loading, and marks in a folder named after the process
 * (a thread has no environment to be told one) when this thread began and finished.
 */
export function whileLoading(mode: string | undefined): void {
  if (mode !== 'worker-slow-load') return;
  const marks = path.join(os.tmpdir(), `symbi-slow-load-${process.pid}`);
  fs.mkdirSync(marks, { recursive: true });
  fs.writeFileSync(path.join(marks, `${threadId}.began`), '');
  const until = Date.now() + SLOW_LOAD_MS;
  while (Date.now() < until);
  fs.writeFileSync(path.join(marks, `${threadId}.finished`), '');
}

import type { RunPhase } from '../shared/run-messages.js';

// Test-only: lets the suite prove what happens when a worker thread dies or
// stops responding in the middle of a run (the owner finishes the journal; a
// second SIGINT leaves at once). Active only when the operator sets
// SYMBI_FAULT_INJECTION and the prompt carries the matching marker; otherwise
// it does nothing.
const MODE = process.env.SYMBI_FAULT_INJECTION;

export function faultHook(prompt: string): ((phase: RunPhase) => void) | undefined {
  if (MODE === 'worker-exit-after-request' && prompt.includes('[[fault:worker-exit]]')) {
    // process.exit() in a worker thread ends that thread only.
    return (phase) => {
      if (phase === 'request_sent') process.exit(1);
    };
  }
  if (MODE === 'worker-hang-after-request' && prompt.includes('[[fault:worker-hang]]')) {
    // Blocks this worker thread for good without burning CPU.
    return (phase) => {
      if (phase === 'request_sent') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    };
  }
  return undefined;
}

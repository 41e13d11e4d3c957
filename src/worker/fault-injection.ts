import type { RunPhase } from '../shared/run-messages.js';

// Test-only: lets the suite prove that a worker thread dying in the middle of a
// run still gets that run's journal finished by its owner in the supervisor.
// Active only when the operator sets SYMBI_FAULT_INJECTION=worker-exit-after-request
// and the prompt carries the marker; otherwise it does nothing.
const ENABLED = process.env.SYMBI_FAULT_INJECTION === 'worker-exit-after-request';
const MARKER = '[[fault:worker-exit]]';

export function faultHook(prompt: string): ((phase: RunPhase) => void) | undefined {
  if (!ENABLED || !prompt.includes(MARKER)) return undefined;
  return (phase) => {
    // process.exit() in a worker thread ends that thread only.
    if (phase === 'request_sent') process.exit(1);
  };
}

import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { CancelMessage } from '../shared/worker-protocol.js';

// Cancellation reaches a running task as a message on its own port (never by
// terminating the thread, which would skip the terminal record of every run on it).
//
// A busy worker thread may take a long time to dispatch a posted message: its
// event loop serves every run's I/O first. The message itself is in the port's
// queue from the moment it is posted, so every run's step boundary also reads
// the queues of all live runs on this thread. A cancel found that way aborts
// its run at once, and the run's terminal record is written in the microtasks
// that follow, ahead of the other runs' queued I/O.
export interface RunCancellation {
  signal: AbortSignal;
  /** Why the run was cancelled, once it was. */
  reason(): string | undefined;
  dispose(): void;
}

const livePolls = new Set<() => void>();

/** Takes every cancel already posted to any live run on this thread, without waiting for the event loop. */
export function pollCancellations(): void {
  for (const poll of livePolls) poll();
}

function isCancelMessage(value: unknown): value is CancelMessage {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'cancel';
}

export function listenForCancellation(port: MessagePort): RunCancellation {
  const controller = new AbortController();
  let reason: string | undefined;
  const cancel = (message: CancelMessage): void => {
    if (reason !== undefined) return;
    reason = typeof message.reason === 'string' && message.reason.length > 0 ? message.reason : 'the run was cancelled';
    controller.abort(new Error(reason));
  };
  const poll = (): void => {
    for (let queued = receiveMessageOnPort(port); queued !== undefined; queued = receiveMessageOnPort(port)) {
      if (isCancelMessage(queued.message)) cancel(queued.message);
    }
  };
  // A cancel posted before the task started is already queued on the port.
  poll();
  const onMessage = (message: unknown): void => {
    if (isCancelMessage(message)) cancel(message);
  };
  port.on('message', onMessage);
  livePolls.add(poll);
  return {
    signal: controller.signal,
    reason: () => reason,
    dispose: () => {
      livePolls.delete(poll);
      port.off('message', onMessage);
    },
  };
}

import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { CancelMessage } from '../shared/run-messages.js';

// Cancellation reaches a running task as a message on its own port (never by
// terminating the thread, which would skip the terminal record of every run on it).
export interface RunCancellation {
  signal: AbortSignal;
  /** Why the run was cancelled, once it was. */
  reason(): string | undefined;
  dispose(): void;
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
  // A cancel posted before the task started is already queued on the port.
  for (let queued = receiveMessageOnPort(port); queued !== undefined; queued = receiveMessageOnPort(port)) {
    if (isCancelMessage(queued.message)) cancel(queued.message);
  }
  const onMessage = (message: unknown): void => {
    if (isCancelMessage(message)) cancel(message);
  };
  port.on('message', onMessage);
  return {
    signal: controller.signal,
    reason: () => reason,
    dispose: () => {
      port.off('message', onMessage);
    },
  };
}

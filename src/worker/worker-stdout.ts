import { parentPort } from 'node:worker_threads';
import { WORKER_OUTPUT_MESSAGE, type WorkerOutputMessage } from '../shared/worker-protocol.js';
import { guardStandardOutputInFs } from './stdout-fs-guard.js';
import { guardStandardOutputHandles } from './stdout-handle-guard.js';
import { redactKeys } from '../shared/secrets/key-redaction.js';
import { lineSink, takeOverStream } from '../shared/text/stream-lines.js';

// Standard output belongs to the supervisor: it is the MCP channel, and one
// stray line in it breaks the client. A worker thread's process.stdout is
// piped into the process's standard output by default, and piscina does not
// pass Worker's `stdout: true` option through, so each thread takes its own
// standard output over here, from its first module (thread-sandbox.ts), before
// any other code of the thread runs:
//
// - process.stdout (the worker's stream, which console.* writes to as well):
//   its low-level _write/_writev are replaced, so every write reaches the
//   sink below whichever reference to the stream the writer holds;
// - descriptor 1 through fs, by number or by any path that names it
//   (stdout-fs-guard.ts, which also lists what stays uncovered);
// - a socket or terminal stream on descriptor 0 or 1, and a child process
//   that would inherit either (stdout-handle-guard.ts): refused.
//
// What is caught goes, a line at a time, to the supervisor, which says it on
// standard error marked as coming from a worker. A chatty library cannot flood
// the operator's log: lines are cut, and each thread has a budget.

/** Characters of one line shown on standard error (the rest is cut, marked). */
const WORKER_OUTPUT_LINE_MAX_CHARS = 500;
/** Lines each worker thread may send; then one notice, then nothing more from that thread. */
const WORKER_OUTPUT_LINES_PER_THREAD = 100;

let secrets: string[] = [];
let sent = 0;

function post(message: WorkerOutputMessage): void {
  try {
    parentPort?.postMessage(message);
  } catch {
    // The supervisor side is gone; there is nobody left to tell.
  }
}

function sendLine(raw: string): void {
  if (sent > WORKER_OUTPUT_LINES_PER_THREAD) return;
  if (sent === WORKER_OUTPUT_LINES_PER_THREAD) {
    sent += 1;
    post({
      type: WORKER_OUTPUT_MESSAGE,
      line: `further standard output of this worker thread is dropped (${WORKER_OUTPUT_LINES_PER_THREAD} lines shown)`,
      suppressed: true,
    });
    return;
  }
  sent += 1;
  let line = redactKeys(raw, secrets, { atEdges: true });
  if (line.length > WORKER_OUTPUT_LINE_MAX_CHARS) line = `${line.slice(0, WORKER_OUTPUT_LINE_MAX_CHARS)}... (cut)`;
  post({ type: WORKER_OUTPUT_MESSAGE, line });
}

const toLines = lineSink(sendLine);

/** Everything written to standard output, by stream or by descriptor: cut into lines for the supervisor. */
function capture(chunk: unknown, encoding?: BufferEncoding): void {
  if (sent > WORKER_OUTPUT_LINES_PER_THREAD) return;
  toLines(chunk, encoding);
}

/**
 * Takes this thread's standard output over, the stream and the fs routes alike; `redact` are strings
 * that never reach standard error, even inside a stray line (the provider key). Call once, first.
 */
export function takeStandardOutput(redact: readonly string[]): void {
  secrets = redact.filter((v) => v.length > 0);
  takeOverStream(process.stdout, capture);
  guardStandardOutputInFs(capture);
  guardStandardOutputHandles();
}

import { parentPort } from 'node:worker_threads';
import { WORKER_OUTPUT_MESSAGE, type WorkerOutputMessage } from '../shared/worker-protocol.js';
import { guardStandardOutputInFs } from './stdout-fs-guard.js';
import { redactKeys } from '../shared/secrets/key-redaction.js';

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
//   (stdout-fs-guard.ts, which also lists what stays uncovered).
//
// What is caught goes, a line at a time, to the supervisor, which says it on
// standard error marked as coming from a worker. A chatty library cannot flood
// the operator's log: lines are cut, and each thread has a budget.

/** Characters of one line shown on standard error (the rest is cut, marked). */
export const WORKER_OUTPUT_LINE_MAX_CHARS = 500;
/** Lines each worker thread may send; then one notice, then nothing more from that thread. */
export const WORKER_OUTPUT_LINES_PER_THREAD = 100;
/** A line without a newline is held up to this many characters, then sent as it is. */
const PENDING_MAX_CHARS = 8192;

let secrets: string[] = [];
let pending = '';
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
    post({ type: WORKER_OUTPUT_MESSAGE, line: `further standard output of this worker thread is dropped (${WORKER_OUTPUT_LINES_PER_THREAD} lines shown)`, suppressed: true });
    return;
  }
  sent += 1;
  let line = redactKeys(raw, secrets, { atEdges: true });
  if (line.length > WORKER_OUTPUT_LINE_MAX_CHARS) line = `${line.slice(0, WORKER_OUTPUT_LINE_MAX_CHARS)}... (cut)`;
  post({ type: WORKER_OUTPUT_MESSAGE, line });
}

function capture(chunk: unknown, encoding?: BufferEncoding): void {
  if (sent > WORKER_OUTPUT_LINES_PER_THREAD) return;
  const text =
    typeof chunk === 'string'
      ? chunk
      : ArrayBuffer.isView(chunk)
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(encoding === 'latin1' ? 'latin1' : 'utf8')
        : String(chunk);
  pending += text;
  let newline = pending.indexOf('\n');
  while (newline !== -1) {
    sendLine(pending.slice(0, newline));
    pending = pending.slice(newline + 1);
    newline = pending.indexOf('\n');
  }
  if (pending.length > PENDING_MAX_CHARS) {
    sendLine(pending);
    pending = '';
  }
}

type WriteCallback = (err?: Error | null) => void;

function takeOverStdoutStream(): void {
  const stream = process.stdout as unknown as {
    _write: (chunk: unknown, encoding: BufferEncoding, callback: WriteCallback) => void;
    _writev: (chunks: { chunk: unknown; encoding: BufferEncoding }[], callback: WriteCallback) => void;
  };
  stream._write = (chunk, encoding, callback) => {
    capture(chunk, encoding);
    callback();
  };
  stream._writev = (chunks, callback) => {
    for (const { chunk, encoding } of chunks) capture(chunk, encoding);
    callback();
  };
}

/**
 * Takes this thread's standard output over, the stream and the fs routes alike; `redact` are strings
 * that never reach standard error, even inside a stray line (the provider key). Call once, first.
 */
export function takeStandardOutput(redact: readonly string[]): void {
  secrets = redact.filter((v) => v.length > 0);
  takeOverStdoutStream();
  guardStandardOutputInFs(capture);
}

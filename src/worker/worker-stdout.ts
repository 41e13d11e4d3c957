import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { WORKER_OUTPUT_MESSAGE, type WorkerOutputMessage } from '../shared/run-messages.js';
import { redactKeys } from './key-redaction.js';

// Standard output belongs to the supervisor: it is the MCP channel, and one
// stray line in it breaks the client. A worker thread's process.stdout is
// piped into the process's standard output by default, and piscina does not
// pass Worker's `stdout: true` option through, so each worker takes its own
// standard output over here, before the task module loads anything else:
//
// - process.stdout (the worker's stream, which console.* writes to as well):
//   its low-level _write/_writev are replaced, so every write reaches the
//   sink below whichever reference to the stream the writer holds;
// - descriptor 1 through fs (fs.write, fs.writeSync, fs.writev, fs.writevSync,
//   what pino/sonic-boom and fs.createWriteStream({fd: 1}) use): each builtin
//   module is this thread's own copy, so the wrappers below change nothing in
//   the supervisor thread.
//
// Not covered: native addons writing to descriptor 1, or a file opened by the
// path /dev/stdout or /proc/self/fd/1; no library this project loads does that.
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

const STDOUT_FD = 1;

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
  let line = redactKeys(raw, secrets);
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

function bytesWritten(buffer: unknown, offsetOrPosition?: unknown, length?: unknown): number {
  if (typeof buffer === 'string') return Buffer.byteLength(buffer);
  if (ArrayBuffer.isView(buffer)) {
    const offset = typeof offsetOrPosition === 'number' ? offsetOrPosition : 0;
    return typeof length === 'number' ? length : buffer.byteLength - offset;
  }
  return 0;
}

function captureFsWrite(buffer: unknown, offsetOrPosition?: unknown, length?: unknown): number {
  if (typeof buffer === 'string' || !ArrayBuffer.isView(buffer)) {
    capture(buffer);
  } else {
    const offset = typeof offsetOrPosition === 'number' ? offsetOrPosition : 0;
    const end = typeof length === 'number' ? offset + length : buffer.byteLength;
    capture(Buffer.from(buffer.buffer, buffer.byteOffset + offset, end - offset));
  }
  return bytesWritten(buffer, offsetOrPosition, length);
}

type FsWriteFunction = (fd: number, ...rest: unknown[]) => unknown;
type FsWriteName = 'write' | 'writeSync' | 'writev' | 'writevSync';

function takeOverDescriptorOne(): void {
  // Seen through one loose signature: the wrappers pass every other call on untouched, whatever its overload.
  const writable = fs as unknown as Record<FsWriteName, FsWriteFunction>;
  const original = { write: writable.write, writeSync: writable.writeSync, writev: writable.writev, writevSync: writable.writevSync };
  const completeLater = (rest: unknown[], written: number, data: unknown): void => {
    const callback = rest[rest.length - 1];
    if (typeof callback === 'function') process.nextTick(() => callback(null, written, data));
  };
  writable.writeSync = (fd, ...rest) => (fd === STDOUT_FD ? captureFsWrite(rest[0], rest[1], rest[2]) : original.writeSync(fd, ...rest));
  writable.write = (fd, ...rest) => {
    if (fd !== STDOUT_FD) return original.write(fd, ...rest);
    completeLater(rest, captureFsWrite(rest[0], rest[1], rest[2]), rest[0]);
    return undefined;
  };
  const captureAll = (buffers: unknown): number => (Array.isArray(buffers) ? buffers.reduce((total: number, b) => total + captureFsWrite(b), 0) : 0);
  writable.writevSync = (fd, ...rest) => (fd === STDOUT_FD ? captureAll(rest[0]) : original.writevSync(fd, ...rest));
  writable.writev = (fd, ...rest) => {
    if (fd !== STDOUT_FD) return original.writev(fd, ...rest);
    completeLater(rest, captureAll(rest[0]), rest[0]);
    return undefined;
  };
  // ESM named imports of node:fs (import { writeSync } from 'node:fs') see the wrappers too.
  syncBuiltinESMExports();
}

// On evaluation: the worker entry imports this module first of all.
takeOverStdoutStream();
takeOverDescriptorOne();

/** Strings that must never reach standard error even inside a stray line (the provider key). */
export function redactInWorkerOutput(values: readonly string[]): void {
  secrets = values.filter((v) => v.length > 0);
}

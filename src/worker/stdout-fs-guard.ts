import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import tty from 'node:tty';

// Keeps standard output out of reach of `fs` in a worker thread. Descriptors
// are process-wide, so a worker that writes to descriptor 1, or opens
// /dev/stdout, /dev/fd/1 or /proc/self/fd/1 (each a new descriptor on the
// same pipe), writes into the MCP channel. Each builtin module is this
// thread's own copy, so the wrappers below change nothing in the supervisor.
//
// - Writes to descriptor 1 (or to descriptor 0 when it is the same file, as
//   with a socket a client passes as both), whole-file writes to it by
//   descriptor or by any path that names it (compared by device and inode,
//   which catches every alias, and /dev/tty when standard output is the
//   terminal), go to `capture` instead: the worker-output channel that says
//   them on standard error.
// - Opening or reading it by path, copying to or from it, and closing
//   descriptors 0 to 2 (whose numbers the next open would reuse) are refused
//   with an EPERM error.
//
// Not covered, so not to be relied on: native addons, WebAssembly under
// node:wasi (its default stdout is descriptor 1) and process.binding('fs').
// Sockets, terminal streams and child processes: stdout-handle-guard.ts.

/** Where diverted writes go: the worker-output capture. */
export type CaptureWrite = (chunk: unknown, encoding?: BufferEncoding) => void;

type AnyFunction = (...args: unknown[]) => unknown;
type Style = 'sync' | 'callback' | 'promise';

const STDOUT_FD = 1;
const STDIN_FD = 0;
const STANDARD_FDS = new Set([0, 1, 2]);

function identityOf(stat: fs.Stats | undefined): string | undefined {
  return stat === undefined ? undefined : `${stat.dev}:${stat.ino}`;
}

function fstatOrUndefined(fd: number): fs.Stats | undefined {
  try {
    return fs.fstatSync(fd);
  } catch {
    return undefined;
  }
}

function refusal(what: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`EPERM: ${what}: standard output is the MCP channel; a worker thread may not reach it`);
  error.code = 'EPERM';
  return error;
}

function byteLengthOf(data: unknown, offset?: unknown, length?: unknown): number {
  if (typeof data === 'string') return Buffer.byteLength(data);
  if (!ArrayBuffer.isView(data)) return 0;
  if (typeof length === 'number') return length;
  return data.byteLength - (typeof offset === 'number' ? offset : 0);
}

/** Replaces the `fs` routes to standard output in this worker thread; call once, before any other module loads. */
export function guardStandardOutputInFs(capture: CaptureWrite): void {
  const stdoutIdentity = identityOf(fstatOrUndefined(STDOUT_FD));
  const aliases = new Set([STDOUT_FD]);
  if (stdoutIdentity !== undefined && identityOf(fstatOrUndefined(STDIN_FD)) === stdoutIdentity) aliases.add(STDIN_FD);
  const statPath = fs.statSync;
  const identities = new Set<string | undefined>([stdoutIdentity]);
  // /dev/tty is another device node that reaches the same terminal.
  if (tty.isatty(STDOUT_FD)) identities.add(identityOf(statPath('/dev/tty', { throwIfNoEntry: false })));
  identities.delete(undefined);

  const isStdout = (target: unknown): boolean => {
    if (typeof target === 'number') return aliases.has(target);
    if (typeof target === 'object' && target !== null && 'fd' in target && typeof target.fd === 'number' && !(target instanceof URL))
      return aliases.has(target.fd);
    if (identities.size === 0 || !(typeof target === 'string' || Buffer.isBuffer(target) || target instanceof URL)) return false;
    try {
      return identities.has(identityOf(statPath(target, { throwIfNoEntry: false })));
    } catch {
      return false;
    }
  };

  const captureData = (data: unknown, offset?: unknown, length?: unknown): number => {
    if (ArrayBuffer.isView(data)) {
      const start = typeof offset === 'number' ? offset : 0;
      const end = typeof length === 'number' ? start + length : data.byteLength;
      capture(Buffer.from(data.buffer, data.byteOffset + start, end - start));
    } else {
      capture(data);
    }
    return byteLengthOf(data, offset, length);
  };
  const captureEach = (buffers: unknown): number => (Array.isArray(buffers) ? buffers.reduce((total: number, b) => total + captureData(b), 0) : 0);
  const captureStream = async (data: unknown): Promise<void> => {
    if (typeof data === 'object' && data !== null && !ArrayBuffer.isView(data) && (Symbol.asyncIterator in data || Symbol.iterator in data)) {
      for await (const chunk of data as AsyncIterable<unknown>) captureData(chunk);
    } else {
      captureData(data);
    }
  };
  const refuse = (name: string) => (): never => {
    throw refusal(name);
  };

  /**
   * Wraps fs[name] (or fs.promises[name]): a call whose arguments at `targets`
   * reach standard output gets `divert` instead, whose results are what the
   * sync form returns, the callback receives after null, or the promise resolves to.
   */
  const wrap = (scope: object, name: string, style: Style, targets: number[], divert: (args: unknown[]) => unknown[] | Promise<unknown[]>): void => {
    const functions = scope as Record<string, AnyFunction>;
    const original = functions[name];
    if (typeof original !== 'function') return;
    functions[name] = function (this: unknown, ...args: unknown[]) {
      if (!targets.some((i) => isStdout(args[i]))) return original.apply(this, args);
      if (style === 'promise')
        return Promise.resolve()
          .then(() => divert(args))
          .then((results) => results[0]);
      if (style === 'sync') return (divert(args) as unknown[])[0];
      const callback = args[args.length - 1];
      let outcome: unknown[];
      try {
        outcome = [null, ...(divert(args) as unknown[])];
      } catch (error) {
        outcome = [error];
      }
      if (typeof callback === 'function') process.nextTick(() => (callback as AnyFunction)(...outcome));
      return undefined;
    };
  };

  // Descriptor writes (what pino/sonic-boom and fs.createWriteStream({fd: 1}) use).
  const written = (args: unknown[]) => [captureData(args[1], args[2], args[3]), args[1]];
  wrap(fs, 'writeSync', 'sync', [0], written);
  wrap(fs, 'write', 'callback', [0], written);
  wrap(fs, 'writevSync', 'sync', [0], (args) => [captureEach(args[1]), args[1]]);
  wrap(fs, 'writev', 'callback', [0], (args) => [captureEach(args[1]), args[1]]);
  // Whole-file writes, by descriptor or path.
  for (const name of ['writeFileSync', 'appendFileSync']) wrap(fs, name, 'sync', [0], (args) => [void captureData(args[1])]);
  for (const name of ['writeFile', 'appendFile']) wrap(fs, name, 'callback', [0], (args) => [void captureData(args[1])]);
  for (const name of ['writeFile', 'appendFile']) wrap(fs.promises, name, 'promise', [0], async (args) => [await captureStream(args[1])]);
  // Opening, reading or copying it by path, and closing the standard descriptors, are refused.
  for (const [name, targets] of [
    ['open', [0]],
    ['readFile', [0]],
    ['copyFile', [0, 1]],
    ['cp', [0, 1]],
  ] as const) {
    wrap(fs, `${name}Sync`, 'sync', [...targets], refuse(`${name}Sync`));
    wrap(fs, name, 'callback', [...targets], refuse(name));
    wrap(fs.promises, name, 'promise', [...targets], refuse(`fs.promises.${name}`));
  }
  wrap(fs, 'openAsBlob', 'promise', [0], refuse('openAsBlob'));
  const original = { close: fs.close, closeSync: fs.closeSync };
  fs.closeSync = (fd) => (STANDARD_FDS.has(fd) ? refuse(`closeSync(${fd})`)() : original.closeSync(fd));
  fs.close = ((fd: number, callback?: fs.NoParamCallback) => {
    if (!STANDARD_FDS.has(fd)) return original.close(fd, callback);
    if (typeof callback === 'function') process.nextTick(() => callback(refusal(`close(${fd})`)));
  }) as typeof fs.close;
  // ESM named imports (import { writeFileSync } from 'node:fs') see the wrappers too.
  syncBuiltinESMExports();
}

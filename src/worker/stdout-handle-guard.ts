import childProcess from 'node:child_process';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import tty from 'node:tty';
import { isRecord } from '../shared/json-value.js';

// Keeps the other JavaScript routes to the MCP channel out of a worker thread's reach, beside the
// `fs` routes (stdout-fs-guard.ts): a socket or a terminal stream opened on descriptor 1 (or 0, the
// channel's input, which a client may pass as the same socket), and a child process that would
// inherit either. Each is refused with EPERM when it is made, before it can write or read a byte.
// The wrappers replace this thread's own copy of each builtin module's export (and, through
// syncBuiltinESMExports, the ES module bindings), so code of the thread finds them whichever way
// it imports the module; the supervisor's modules are untouched.
//
// Not covered: Node.js internals that make such handles without the exported constructors (none
// takes a descriptor number from its caller), native addons, and process.binding.

const CHANNEL_FDS = new Set([0, 1]);

function refusal(what: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`EPERM: ${what}: standard input and output are the MCP channel; a worker thread may not reach them`);
  error.code = 'EPERM';
  return error;
}

/** Whether `fd` is descriptor 0 or 1, or another descriptor on the same file (a dup of the channel). */
function isChannel(fd: unknown): boolean {
  if (typeof fd !== 'number') return false;
  if (CHANNEL_FDS.has(fd)) return true;
  try {
    const stat = fs.fstatSync(fd);
    return [...CHANNEL_FDS].some((channel) => {
      try {
        const own = fs.fstatSync(channel);
        return own.dev === stat.dev && own.ino === stat.ino;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** A constructor that refuses what `check` refuses, called with or without `new`, subclassable and `instanceof`-transparent. */
function guardedConstructor<T extends object>(original: T, check: (args: unknown[]) => void): T {
  return new Proxy(original, {
    construct(target, args, newTarget) {
      check(args);
      return Reflect.construct(target as new (...a: unknown[]) => object, args as unknown[], newTarget) as object;
    },
    apply(target, thisArg, args) {
      check(args);
      return Reflect.apply<unknown, unknown[], unknown>(target as (...a: unknown[]) => unknown, thisArg, args);
    },
  });
}

/** The stdio of a child process reaches the channel: it inherits descriptor 0 or 1, or is given either (or a dup). */
function stdioReachesChannel(stdio: unknown): boolean {
  if (stdio === 'inherit') return true;
  if (!Array.isArray(stdio)) return false;
  return stdio.some((entry: unknown, index) => {
    if (entry === 'inherit') return index < 2;
    if (typeof entry === 'number') return isChannel(entry);
    if (entry !== null && typeof entry === 'object' && 'fd' in entry) return isChannel(entry.fd);
    return false;
  });
}

function optionsArgument(args: unknown[]): Record<string, unknown> | undefined {
  // (command[, args][, options]): the options are the last plain object.
  for (let i = args.length - 1; i >= 0; i -= 1) {
    const arg = args[i];
    if (isRecord(arg)) return arg;
  }
  return undefined;
}

/** Replaces the handle and child-process routes to the channel in this worker thread; call once, first. */
export function guardStandardOutputHandles(): void {
  const socketCheck = (args: unknown[]): void => {
    const options = args[0];
    if (options !== null && typeof options === 'object' && isChannel((options as { fd?: unknown }).fd)) throw refusal('net.Socket({ fd })');
  };
  const socket = guardedConstructor(net.Socket, socketCheck);
  Object.assign(net, { Socket: socket, Stream: socket });

  const ttyCheck = (name: string) => (args: unknown[]) => {
    if (isChannel(args[0])) throw refusal(`tty.${name}(fd)`);
  };
  Object.assign(tty, {
    WriteStream: guardedConstructor(tty.WriteStream, ttyCheck('WriteStream')),
    ReadStream: guardedConstructor(tty.ReadStream, ttyCheck('ReadStream')),
  });

  // Every asynchronous form (spawn, exec, execFile, fork) starts its child through ChildProcess#spawn.
  const prototype = childProcess.ChildProcess.prototype as unknown as { spawn: (options: { stdio?: unknown }) => unknown };
  const spawn = prototype.spawn;
  prototype.spawn = function guardedSpawn(this: unknown, options: { stdio?: unknown }) {
    if (stdioReachesChannel(options?.stdio)) throw refusal('a child process inheriting the channel');
    return spawn.call(this, options);
  };
  // fork's default is to inherit: without `silent` or its own stdio, its child would share the channel.
  const fork = childProcess.fork;
  const guardedFork = function (this: unknown, ...args: unknown[]) {
    const options = optionsArgument(args.slice(1));
    if (options === undefined || (options.silent !== true && options.stdio === undefined)) throw refusal('fork() inheriting the channel');
    return Reflect.apply<unknown, unknown[], unknown>(fork as (...a: unknown[]) => unknown, this, args);
  };
  const syncForms = ['spawnSync', 'execSync', 'execFileSync'] as const;
  const replaced: Record<string, unknown> = { fork: guardedFork };
  for (const name of syncForms) {
    const original = childProcess[name] as (...args: unknown[]) => unknown;
    replaced[name] = function (this: unknown, ...args: unknown[]) {
      if (stdioReachesChannel(optionsArgument(args.slice(1))?.stdio)) throw refusal(`${name} inheriting the channel`);
      return Reflect.apply<unknown, unknown[], unknown>(original, this, args);
    };
  }
  Object.assign(childProcess, replaced);
  syncBuiltinESMExports();
}

import os from 'node:os';
import type { OpenFlags } from './open-flags.js';

// A confinement route: the handful of descriptor-relative system calls every
// project and storage file goes through. Each call names one component inside
// an open directory; none of them follows a symlink at that component when the
// caller passes O_NOFOLLOW. The rules (no "..", no hidden names, one component
// at a time) live in pinned-directory.ts; a route only reaches the kernel.

export const ROUTE_NAMES = ['openat2', 'libc', 'proc'] as const;
export type RouteName = (typeof ROUTE_NAMES)[number];

export interface DirectoryListing {
  /** Raw entry names (never "." or ".."), in directory order. */
  names: Buffer[];
  /** True when the directory holds more than the `max` entries asked for. */
  truncated: boolean;
}

export interface DescriptorRoute {
  readonly name: RouteName;
  /** One line for standard error: how this route reaches files. */
  readonly description: string;
  /** The open(2) flags this route was built with (open-flags.ts); callers combine these, never their own. */
  readonly flags: OpenFlags;
  /** openat(dirFd, name, flags[, mode]); the descriptor is close-on-exec. Throws an errno error. */
  openAt(dirFd: number, name: string, flags: number, mode?: number): number;
  /**
   * Opens a multi-component path below `dirFd` in one call, refusing a symlink
   * or an escape anywhere in it; absent on routes that walk component by component.
   */
  openBeneath?(dirFd: number, components: readonly string[], flags: number): number;
  /** mkdirat(dirFd, name, mode). Throws an errno error. */
  mkdirAt(dirFd: number, name: string, mode: number): void;
  /** renameat(dirFd, from, dirFd, to): within one directory. Throws an errno error. */
  renameAt(dirFd: number, from: string, to: string): void;
  /**
   * linkat(dirFd, from, dirFd, to, 0): a second name for the file `from` (a symlink there is
   * linked, never followed); fails with EEXIST if `to` exists (any kind of entry), so of
   * several processes linking to one name exactly one succeeds. Throws an errno error.
   */
  linkAt(dirFd: number, from: string, to: string): void;
  /** unlinkat(dirFd, name, 0): a file, never a directory. Throws an errno error. */
  unlinkAt(dirFd: number, name: string): void;
  /** Lists the directory open as `dirFd` (its own offset is left alone), reading at most `max` entries. */
  list(dirFd: number, max: number): DirectoryListing;
  /**
   * A file with no name yet, in the directory `dirFd` (Linux O_TMPFILE), opened for
   * appending with `mode`; it vanishes when closed unless `nameUnnamedFile` gives it a
   * name first. Absent where the platform or route has no such file.
   */
  openUnnamedFile?(dirFd: number, mode: number): number;
  /** Gives the unnamed file `fd` the name `name` in `dirFd`; fails with EEXIST if the name exists (any kind of entry). */
  nameUnnamedFile?(fd: number, dirFd: number, name: string): void;
}

const ERRNO_NAMES = new Map<number, string>(Object.entries(os.constants.errno).map(([name, value]) => [value, name]));

/** An Error shaped like Node's own fs errors (`code` is the errno name) for a failed libc call. */
export function errnoError(errno: number, call: string): NodeJS.ErrnoException {
  const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
  const err: NodeJS.ErrnoException = new Error(`${code}: ${call} failed`);
  err.code = code;
  err.errno = errno;
  err.syscall = call;
  return err;
}

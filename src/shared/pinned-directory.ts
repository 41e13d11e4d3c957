import fs from 'node:fs';
import path from 'node:path';
import { checkDescriptorAccess, projectFilesUnavailable, type DescriptorAccess } from './descriptor-access-check.js';

// Project files are reached only through a directory descriptor opened once at
// startup. Linux has no openat() in Node.js, but opening
// /proc/self/fd/<dirfd>/<name> resolves <name> relative to that descriptor, and
// O_NOFOLLOW makes a symlink at <name> fail instead of being followed. Walking
// one component at a time this way means no symlink is followed anywhere and a
// rename of the project folder after startup changes nothing we read.

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
const DIRECTORY_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
// O_NONBLOCK keeps an open of a FIFO from waiting for a writer; fstat rejects it next.
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

export type ConfinementCode =
  | 'invalid_path'
  | 'not_found'
  | 'symlink'
  | 'not_directory'
  | 'not_regular'
  | 'hardlinked'
  | 'too_large'
  | 'not_utf8'
  | 'io'
  /** Descriptor-relative access does not work on this system (descriptor-access-check.ts). */
  | 'unavailable';

export class ConfinementError extends Error {
  constructor(
    readonly code: ConfinementCode,
    message: string,
  ) {
    super(message);
    this.name = 'ConfinementError';
  }
}

export interface PathRules {
  /** Allow components starting with `.` (only the server's own `.symbiont` storage uses this). */
  allowHidden?: boolean;
  /** Allow paths under `policies/` (only the startup policy loader uses this). */
  allowPolicies?: boolean;
}

const ALLOWED_PATHS =
  'a project-relative path of plain components (no leading "/", no "..", no hidden names, no backslashes, not under policies/)';

/** Splits a caller-supplied project-relative path into components, refusing anything outside the rules. */
export function projectPathComponents(relPath: string, rules: PathRules = {}): string[] {
  const refuse = (what: string): never => {
    throw new ConfinementError('invalid_path', `path refused: ${what}; expected ${ALLOWED_PATHS}`);
  };
  if (typeof relPath !== 'string' || relPath.length === 0) refuse('the path is empty');
  if (relPath.includes('\0')) refuse('the path contains a NUL byte');
  if (relPath.includes('\\')) refuse('the path contains a backslash');
  if (relPath.startsWith('/')) refuse('absolute paths are not allowed');
  if (Buffer.byteLength(relPath, 'utf8') > 4096) refuse('the path is longer than 4096 bytes');
  const components = relPath.split('/').filter((c) => c !== '' && c !== '.');
  if (components.length === 0) refuse('the path names the project root');
  for (const c of components) {
    if (c === '..') refuse('parent traversal ("..") is not allowed');
    if (c.startsWith('.') && !rules.allowHidden) refuse(`hidden component "${c}" is not allowed`);
  }
  if (components[0] === 'policies' && !rules.allowPolicies) refuse('the policies directory is not readable through this tool');
  return components;
}

export function procPath(dirFd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dirFd}` : `/proc/self/fd/${dirFd}/${name}`;
}

function describeOpenError(err: NodeJS.ErrnoException, shown: string): ConfinementError {
  switch (err.code) {
    case 'ENOENT':
      return new ConfinementError('not_found', `${shown}: no such file in the project`);
    case 'ELOOP':
    case 'EMLINK':
      return new ConfinementError('symlink', `${shown}: is a symlink; symlinks are never followed`);
    case 'ENOTDIR':
      return new ConfinementError('not_directory', `${shown}: a path component is not a directory`);
    case 'EACCES':
    case 'EPERM':
      return new ConfinementError('io', `${shown}: permission denied`);
    case 'ENXIO':
      return new ConfinementError('not_regular', `${shown}: is not a regular file`);
    default:
      return new ConfinementError('io', `${shown}: cannot be opened (${err.code ?? 'error'})`);
  }
}

// With O_DIRECTORY | O_NOFOLLOW, Linux reports a symlink as ENOTDIR; lstat (which
// never follows the final component) tells the two apart for a clearer message.
function isSymlinkAt(dirFd: number, name: string): boolean {
  try {
    return fs.lstatSync(procPath(dirFd, name)).isSymbolicLink();
  } catch {
    return false;
  }
}

export interface ConfinedText {
  text: string;
  bytes: number;
  stat: fs.Stats;
}

export class PinnedDirectory {
  private constructor(
    /** Descriptor of the project root, kept open for the life of the process. */
    readonly fd: number,
    /** Absolute path the project had when it was pinned (for display only). */
    readonly displayPath: string,
    /** Whether descriptor-relative access works here; when it does not, every access refuses with the reason. */
    readonly access: DescriptorAccess,
  ) {}

  static pin(dir: string): PinnedDirectory {
    const absolute = path.resolve(dir);
    const fd = fs.openSync(absolute, O_RDONLY | O_DIRECTORY);
    let shown = absolute;
    try {
      shown = fs.readlinkSync(procPath(fd));
    } catch {
      // keep the resolved path
    }
    return new PinnedDirectory(fd, shown, checkDescriptorAccess(fd));
  }

  /**
   * Wraps a descriptor pinned elsewhere in this process (worker threads share
   * the table). Access was checked when that descriptor's root was pinned: a
   * run only starts once the supervisor found it available.
   */
  static fromDescriptor(fd: number, displayPath: string): PinnedDirectory {
    return new PinnedDirectory(fd, displayPath, { available: true });
  }

  /**
   * Opens the directory named by `components` below the root, one component at
   * a time, never following a symlink. The caller closes the returned descriptor.
   * With `createMode`, missing components are created with that mode.
   */
  openDirectory(components: readonly string[], createMode?: number): number {
    if (!this.access.available) throw new ConfinementError('unavailable', projectFilesUnavailable(this.access.reason));
    let current = this.fd;
    const shownParts: string[] = [];
    try {
      for (const name of components) {
        shownParts.push(name);
        const shown = shownParts.join('/');
        let next: number;
        try {
          next = fs.openSync(procPath(current, name), DIRECTORY_FLAGS);
        } catch (err) {
          const e = err as NodeJS.ErrnoException;
          if (e.code === 'ENOTDIR' && isSymlinkAt(current, name)) throw describeOpenError({ ...e, code: 'ELOOP' }, shown);
          if (e.code !== 'ENOENT' || createMode === undefined) throw describeOpenError(e, shown);
          try {
            // mkdir never follows a symlink at its final component.
            fs.mkdirSync(procPath(current, name), { mode: createMode });
          } catch (mkErr) {
            if ((mkErr as NodeJS.ErrnoException).code !== 'EEXIST') throw describeOpenError(mkErr as NodeJS.ErrnoException, shown);
          }
          try {
            next = fs.openSync(procPath(current, name), DIRECTORY_FLAGS);
          } catch (reErr) {
            throw describeOpenError(reErr as NodeJS.ErrnoException, shown);
          }
        }
        if (current !== this.fd) fs.closeSync(current);
        current = next;
      }
      return current === this.fd ? fs.openSync(procPath(this.fd), DIRECTORY_FLAGS & ~O_NOFOLLOW) : current;
    } catch (err) {
      if (current !== this.fd) fs.closeSync(current);
      throw err;
    }
  }

  /** Reads a regular, single-link, UTF-8 file at a project-relative path. */
  readTextFile(relPath: string, maxBytes: number, rules: PathRules = {}): ConfinedText {
    const components = projectPathComponents(relPath, rules);
    const fileName = components[components.length - 1]!;
    const dirFd = this.openDirectory(components.slice(0, -1));
    try {
      return readTextFileAt(dirFd, fileName, maxBytes, components.join('/'));
    } finally {
      fs.closeSync(dirFd);
    }
  }
}

/** Opens `name` inside `dirFd` without following a symlink and checks it is a lone regular file. */
export function openRegularFileAt(dirFd: number, name: string, shown: string, extraFlags = 0): { fd: number; stat: fs.Stats } {
  let fd: number;
  try {
    fd = fs.openSync(procPath(dirFd, name), FILE_FLAGS | extraFlags);
  } catch (err) {
    throw describeOpenError(err as NodeJS.ErrnoException, shown);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (stat.isDirectory()) throw new ConfinementError('not_regular', `${shown}: is a directory, not a regular file`);
    if (!stat.isFile()) throw new ConfinementError('not_regular', `${shown}: is not a regular file (FIFO, socket or device)`);
    if (stat.nlink !== 1) throw new ConfinementError('hardlinked', `${shown}: has ${stat.nlink} hard links; hardlinked files are refused`);
    return { fd, stat };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function decodeUtf8Strict(bytes: Uint8Array, shown: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ConfinementError('not_utf8', `${shown}: is not valid UTF-8 text`);
  }
}

export function readTextFileAt(dirFd: number, name: string, maxBytes: number, shown: string): ConfinedText {
  const { fd, stat } = openRegularFileAt(dirFd, name, shown);
  try {
    if (stat.size > maxBytes) throw new ConfinementError('too_large', `${shown}: is ${stat.size} bytes; the limit is ${maxBytes} bytes`);
    // Read at most maxBytes + 1 so a file that grows after fstat is still caught.
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes) + 1);
    let filled = 0;
    while (filled < buffer.length) {
      let n: number;
      try {
        n = fs.readSync(fd, buffer, filled, buffer.length - filled, filled);
      } catch (err) {
        throw describeOpenError(err as NodeJS.ErrnoException, shown);
      }
      if (n === 0) break;
      filled += n;
    }
    if (filled > maxBytes) throw new ConfinementError('too_large', `${shown}: is larger than the limit of ${maxBytes} bytes`);
    const bytes = buffer.subarray(0, filled);
    return { text: decodeUtf8Strict(bytes, shown), bytes: filled, stat };
  } finally {
    fs.closeSync(fd);
  }
}

import fs from 'node:fs';
import { ConfinementError, decodeUtf8Strict, describeOpenError, projectPathComponents, type PathRules } from './path-rules.js';
import { projectFilesUnavailable, routeByName, type DescriptorAccess } from './routes.js';
import type { DescriptorRoute, RouteName } from './descriptor-route.js';
import { ReservedDirectories } from './reserved-directories.js';

// Project files are reached only through a directory descriptor opened once at
// startup. Every path is resolved from it one component at a time through the
// confinement route proven at startup (route-choice.ts), each open
// with O_NOFOLLOW so a symlink fails instead of being followed. So no symlink is
// followed anywhere, and a rename of the project folder after startup changes
// nothing we read.

/** O_DIRECTORY | O_NOFOLLOW: a directory, never through a symlink. */
function directoryFlags(route: DescriptorRoute): number {
  const f = route.flags;
  return f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW;
}

/** O_NONBLOCK keeps an open of a FIFO from waiting for a writer; fstat rejects it next. */
export function fileFlags(route: DescriptorRoute): number {
  const f = route.flags;
  return f.O_RDONLY | f.O_NOFOLLOW | f.O_NONBLOCK;
}

// With O_DIRECTORY | O_NOFOLLOW, Linux reports a symlink as ENOTDIR. Opening the
// same name again without O_DIRECTORY (still O_NOFOLLOW) tells the two apart.
function isSymlinkAt(route: DescriptorRoute, dirFd: number, name: string): boolean {
  let fd: number;
  try {
    fd = route.openAt(dirFd, name, fileFlags(route));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ELOOP' || code === 'EMLINK';
  }
  fs.closeSync(fd);
  return false;
}

/** Looks at a file opened for reading before its bytes are read (a writer check); throws to refuse it. */
export type OpenFileInspection = (fd: number, stat: fs.Stats) => void;

export interface ConfinedText {
  text: string;
  bytes: number;
  stat: fs.Stats;
}

/** The project root, pinned by descriptor at startup, and the only way to reach its files. */
export class PinnedDirectory {
  /** policies/ and .symbiont/ by device and inode (reserved-directories.ts); empty until recordReservedDirectories. */
  private readonly reserved = new ReservedDirectories();

  private constructor(
    /** Descriptor of the project root, kept open for the life of the process. */
    readonly fd: number,
    /** Absolute path the project had when it was pinned (for display only). */
    readonly displayPath: string,
    /** The route proven at startup, or why none could be; without one every access refuses with the reason. */
    readonly access: DescriptorAccess,
  ) {}

  /** A pinned directory over `fd` reached as `access` says (route-choice.ts decides it at startup). */
  static withAccess(fd: number, displayPath: string, access: DescriptorAccess): PinnedDirectory {
    return new PinnedDirectory(fd, displayPath, access);
  }

  /**
   * Wraps a descriptor pinned elsewhere in this process (worker threads share
   * the table), reached through the route the supervisor proved at startup: a
   * run only starts once it found one.
   */
  static fromDescriptor(fd: number, displayPath: string, route: RouteName): PinnedDirectory {
    return new PinnedDirectory(fd, displayPath, { available: true, route: routeByName(route), why: 'chosen by the supervisor' });
  }

  /** A pinned directory that uses `route` (the startup self-test checks a route on its scratch directory this way). */
  static withRoute(fd: number, displayPath: string, route: DescriptorRoute): PinnedDirectory {
    return new PinnedDirectory(fd, displayPath, { available: true, route, why: 'under test' });
  }

  /** The confinement route; throws the one-line refusal when none could be proven. */
  get route(): DescriptorRoute {
    if (!this.access.available) throw new ConfinementError('unavailable', projectFilesUnavailable(this.access.reason));
    return this.access.route;
  }

  /**
   * Opens the directory named by `components` below the root, one component at
   * a time, never following a symlink. The caller closes the returned descriptor.
   * With `createMode`, missing components are created with that mode.
   */
  openDirectory(components: readonly string[], createMode?: number): number {
    const route = this.route;
    if (components.length === 0) return route.openAt(this.fd, '.', route.flags.O_RDONLY | route.flags.O_DIRECTORY);
    const guarded = this.guards(components);
    // With the reserved directories to check, only a one-component path may skip the walk: its one directory is the result.
    if (route.openBeneath !== undefined && createMode === undefined && (!guarded || components.length === 1)) {
      let fd: number | undefined;
      try {
        fd = route.openBeneath(this.fd, components, directoryFlags(route));
      } catch {
        // The walk below gives the precise refusal (which component, and why).
      }
      if (fd !== undefined) {
        try {
          if (guarded) this.reserved.refuseReserved(fd, components.join('/'));
        } catch (err) {
          fs.closeSync(fd);
          throw err;
        }
        return fd;
      }
    }
    let current = this.fd;
    const shownParts: string[] = [];
    try {
      for (const name of components) {
        shownParts.push(name);
        const next = openDirectoryAt(route, current, name, shownParts.join('/'), createMode);
        if (current !== this.fd) fs.closeSync(current);
        current = next;
        if (guarded) this.reserved.refuseReserved(current, shownParts.join('/'));
      }
      return current;
    } catch (err) {
      if (current !== this.fd) fs.closeSync(current);
      throw err;
    }
  }

  /**
   * Records policies/ and .symbiont/ by device and inode, so a walk that
   * reaches them under another name is refused (reserved-directories.ts).
   * Called when the project is pinned and again once the storage exists.
   */
  recordReservedDirectories(): void {
    if (this.access.available) this.reserved.record(this.access.route, this.fd);
  }

  /** Whether a walk along `components` must check each directory against the reserved ones. */
  private guards(components: readonly string[]): boolean {
    return this.reserved.size > 0 && !ReservedDirectories.spelled(components[0]);
  }

  /** Reads a regular, single-link, UTF-8 file at a project-relative path. */
  readTextFile(relPath: string, maxBytes: number, rules: PathRules = {}, inspect?: OpenFileInspection): ConfinedText {
    const components = projectPathComponents(relPath, rules);
    const shown = components.join('/');
    const route = this.route;
    // A file directly in the root passes no directory; a deeper one is walked so each directory is checked.
    if (route.openBeneath !== undefined && (components.length === 1 || !this.guards(components))) {
      let fd: number | undefined;
      try {
        fd = route.openBeneath(this.fd, components, fileFlags(route));
      } catch {
        // The walk below gives the precise refusal.
      }
      if (fd !== undefined) return readOpenTextFile(fd, maxBytes, shown, inspect);
    }
    const fileName = components[components.length - 1]!;
    const dirFd = this.openDirectory(components.slice(0, -1));
    try {
      return readTextFileAt(route, dirFd, fileName, maxBytes, shown, inspect);
    } finally {
      fs.closeSync(dirFd);
    }
  }
}

/** Opens one directory component `name` in `dirFd` without following a symlink, creating it with `createMode` when asked. */
function openDirectoryAt(route: DescriptorRoute, dirFd: number, name: string, shown: string, createMode?: number): number {
  const flags = directoryFlags(route);
  try {
    return route.openAt(dirFd, name, flags);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOTDIR' && isSymlinkAt(route, dirFd, name)) throw describeOpenError({ ...e, code: 'ELOOP' }, shown);
    if (e.code !== 'ENOENT' || createMode === undefined) throw describeOpenError(e, shown);
  }
  try {
    // mkdir never follows a symlink at its final component.
    route.mkdirAt(dirFd, name, createMode);
  } catch (mkErr) {
    if ((mkErr as NodeJS.ErrnoException).code !== 'EEXIST') throw describeOpenError(mkErr as NodeJS.ErrnoException, shown);
  }
  try {
    return route.openAt(dirFd, name, flags);
  } catch (reErr) {
    throw describeOpenError(reErr as NodeJS.ErrnoException, shown);
  }
}

/** Why a file with this status is refused as hardlinked (link count above 1), or undefined when it has exactly one link. */
export function hardLinkProblem(stat: fs.Stats | fs.BigIntStats): string | undefined {
  return Number(stat.nlink) === 1 ? undefined : `has ${stat.nlink} hard links; hardlinked files are refused`;
}

/** Checks that the open descriptor `fd` is a lone regular file; closes it and throws the refusal otherwise. */
function checkRegularFile(fd: number, shown: string): fs.Stats {
  try {
    const stat = fs.fstatSync(fd);
    if (stat.isDirectory()) throw new ConfinementError('not_regular', `${shown}: is a directory, not a regular file`);
    if (!stat.isFile()) throw new ConfinementError('not_regular', `${shown}: is not a regular file (FIFO, socket or device)`);
    const linked = hardLinkProblem(stat);
    if (linked !== undefined) throw new ConfinementError('hardlinked', `${shown}: ${linked}`);
    return stat;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** Opens `name` inside `dirFd` without following a symlink and checks it is a lone regular file. */
export function openRegularFileAt(route: DescriptorRoute, dirFd: number, name: string, shown: string): { fd: number; stat: fs.Stats } {
  let fd: number;
  try {
    fd = route.openAt(dirFd, name, fileFlags(route));
  } catch (err) {
    throw describeOpenError(err as NodeJS.ErrnoException, shown);
  }
  return { fd, stat: checkRegularFile(fd, shown) };
}

/**
 * Device and inode of the entry `name` in `dirFd`, without following a
 * symlink; undefined when it is absent or not a file this process can open.
 * Used to check that a name still refers to a file we created before unlinking it.
 */
export function entryIdentityAt(route: DescriptorRoute, dirFd: number, name: string): { dev: number; ino: number } | undefined {
  let fd: number;
  try {
    fd = route.openAt(dirFd, name, fileFlags(route));
  } catch {
    return undefined;
  }
  try {
    const stat = fs.fstatSync(fd);
    return { dev: stat.dev, ino: stat.ino };
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads the regular, single-link, UTF-8 file `name` inside `dirFd`, at most `maxBytes`. */
export function readTextFileAt(
  route: DescriptorRoute,
  dirFd: number,
  name: string,
  maxBytes: number,
  shown: string,
  inspect?: OpenFileInspection,
): ConfinedText {
  const { fd, stat } = openRegularFileAt(route, dirFd, name, shown);
  return readCheckedTextFile(fd, stat, maxBytes, shown, inspect);
}

function readOpenTextFile(fd: number, maxBytes: number, shown: string, inspect?: OpenFileInspection): ConfinedText {
  return readCheckedTextFile(fd, checkRegularFile(fd, shown), maxBytes, shown, inspect);
}

/** Reads and closes `fd`, already checked (`stat`) to be a lone regular file, after `inspect` looked at it by descriptor. */
function readCheckedTextFile(fd: number, stat: fs.Stats, maxBytes: number, shown: string, inspect?: OpenFileInspection): ConfinedText {
  try {
    inspect?.(fd, stat);
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

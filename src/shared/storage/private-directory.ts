import fs from 'node:fs';
import { ConfinementError, type DescriptorRoute, PinnedDirectory, projectFilesUnavailable } from '../confinement/index.js';
import { fileModeText } from '../text/file-mode.js';
import { trustedWritersProblem } from './directory-ownership.js';

// The server's own storage (.symbiont/ and what lies below it) must be private:
// a real directory (never a symlink), owned by the server's user, with no group
// or other permission bits. Anything else could let another user read or plant
// evidence, so it is refused rather than repaired. At startup (when a level
// may be created) each level also goes through the writer check of
// directory-ownership.ts, which reads its ACL by descriptor, a default ACL
// included: what the server creates there later inherits it. A run's worker
// repeats the mode rule only (it loads no ACL reader).

export class UnsafeStorageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeStorageError';
  }
}

const PRIVATE_DIRECTORY_MODE = 0o700;
const GROUP_OR_OTHER_ACCESS = 0o077;

/**
 * The one mode rule of the private storage (its directories, the signing key, the journals'
 * folder): no group or other permission bit. Only those bits are looked at: a setgid bit,
 * which every directory made inside a setgid folder inherits (mkdir(2)), grants nobody
 * access. Returns the clause a refusal gives, or undefined when the mode is private.
 */
export function privateModeProblem(mode: number, expected: number): string | undefined {
  if ((mode & GROUP_OR_OTHER_ACCESS) === 0) return undefined;
  return `mode ${fileModeText(mode & 0o777)} grants group or other access; expected ${fileModeText(expected)}`;
}

/** Refuses `fd` unless it is a directory owned by this user with no group or other permission bits. */
export function checkPrivateDirectory(fd: number, shown: string): void {
  const stat = fs.fstatSync(fd);
  if (!stat.isDirectory()) throw new UnsafeStorageError(`${shown}: unsafe storage: not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new UnsafeStorageError(`${shown}: unsafe storage: owned by uid ${stat.uid}, not by the server's uid ${uid}`);
  }
  const modeProblem = privateModeProblem(stat.mode, PRIVATE_DIRECTORY_MODE);
  if (modeProblem !== undefined) throw new UnsafeStorageError(`${shown}: unsafe storage: ${modeProblem}`);
}

/**
 * Opens the directory `name` in `dirFd`, creating it (0700) when it is absent and `create`
 * is set (at startup); a run opens these without creating them. Throws UnsafeStorageError.
 */
function openOrCreateDirectory(dirFd: number, name: string, shown: string, route: DescriptorRoute, create: boolean): number {
  const open = (): number => PinnedDirectory.withRoute(dirFd, shown, route).openDirectory([name]);
  try {
    try {
      return open();
    } catch (err) {
      if (!(err instanceof ConfinementError && err.code === 'not_found')) throw err;
      if (!create) throw new UnsafeStorageError(`${shown}: the storage directory was removed after startup; restart the server to create it again`);
    }
    try {
      route.mkdirAt(dirFd, name, PRIVATE_DIRECTORY_MODE);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new UnsafeStorageError(`${shown}: cannot create storage directory (${code ?? 'error'})`);
    }
    return open();
  } catch (err) {
    if (err instanceof UnsafeStorageError) throw err;
    if (err instanceof ConfinementError && err.code === 'symlink') throw new UnsafeStorageError(`${shown}: unsafe storage: is a symlink`);
    if (err instanceof ConfinementError && err.code === 'not_directory') throw new UnsafeStorageError(`${shown}: unsafe storage: not a directory`);
    throw new UnsafeStorageError(`${shown}: cannot open storage directory: ${(err as Error).message}`);
  }
}

/**
 * Opens the private directory named by `components`, e.g. ['.symbiont', 'governed'],
 * checking every level, and creating (mode 0700) a level that is absent when `create`
 * is true. Returns a descriptor the caller closes. Throws UnsafeStorageError with the path
 * and the problem.
 */
export function openPrivateDirectory(project: PinnedDirectory, components: readonly string[], { create }: { create: boolean }): number {
  // Without descriptor-relative access every mkdir below would fail as if a parent were missing.
  if (!project.access.available) {
    throw new UnsafeStorageError(`${[project.displayPath, ...components].join('/')}: ${projectFilesUnavailable(project.access.reason)}`);
  }
  const route = project.route;
  let current = project.fd;
  const shownParts: string[] = [project.displayPath];
  try {
    for (const name of components) {
      shownParts.push(name);
      const shown = shownParts.join('/');
      const next = openOrCreateDirectory(current, name, shown, route, create);
      if (current !== project.fd) fs.closeSync(current);
      current = next;
      checkPrivateDirectory(current, shown);
      if (create) {
        const writers = trustedWritersProblem(current, shown);
        if (writers !== undefined) throw new UnsafeStorageError(`${shown}: unsafe storage: ${writers}`);
      }
    }
    return current;
  } catch (err) {
    if (current !== project.fd) fs.closeSync(current);
    throw err;
  }
}

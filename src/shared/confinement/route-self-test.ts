import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfinementError } from './path-rules.js';
import { fileFlags, openRegularFileAt, PinnedDirectory } from './pinned-directory.js';
import type { DescriptorRoute, DirectoryListing } from './descriptor-route.js';
import { descriptorFlagsThroughLibc } from './libc-route.js';
import type { ProbeMemory } from './proof-cache.js';
import { FD_CLOEXEC, openFlags } from './open-flags.js';
import { fileModeText } from '../text/file-mode.js';

// Before a route serves, it proves itself in a private scratch directory with
// the same code the file tools use: a nested file opens and its descriptor is
// close-on-exec, non-blocking and read-only; a symlink as leaf and as
// directory, a file used as a directory, a hardlinked file, a directory as
// leaf and ".." are each refused; a listing returns exactly the names created;
// the storage calls (create, mkdir, rename, unlink) do what they say. A wrong
// constant, a missing symbol or an unexpected errno shows up as one failed
// check, and the route is not used.

const CONTENT = 'confinement self-test\n';
/** What a/ holds: the listing must return exactly these (one name is not ASCII, to check the bytes). */
const LISTED = ['b', 'dir-link', 'linked-\u00fc'];

/** Thrown with the name of the failed check and what happened instead. */
export class SelfTestFailure extends Error {
  constructor(check: string, detail: string) {
    super(`${check}: ${detail}`);
    this.name = 'SelfTestFailure';
  }
}

function expectRefusal(check: string, code: ConfinementError['code'], attempt: () => unknown): void {
  try {
    const result = attempt();
    if (typeof result === 'number') fs.closeSync(result);
  } catch (err) {
    if (err instanceof ConfinementError && err.code === code) return;
    throw new SelfTestFailure(check, `refused as ${err instanceof ConfinementError ? err.code : (err as Error).message}, expected ${code}`);
  }
  throw new SelfTestFailure(check, 'was not refused');
}

/**
 * The descriptor's F_GETFD and F_GETFL words: through libc's fcntl for the
 * routes that call libc anyway, from /proc/self/fdinfo for the /proc route
 * (Linux), which so never calls into a C library.
 */
function descriptorStatus(route: DescriptorRoute, fd: number): { fdFlags: number; statusFlags: number } {
  if (route.name !== 'proc') return descriptorFlagsThroughLibc(fd);
  const flags = /^flags:\s+([0-7]+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  if (flags === null) throw new Error('no flags line in /proc/self/fdinfo');
  const word = parseInt(flags[1]!, 8);
  return { fdFlags: word & openFlags('linux').O_CLOEXEC ? FD_CLOEXEC : 0, statusFlags: word };
}

/** The process's file mode creation mask (process.umask() with no argument is deprecated; setting it back is the documented way). */
function currentUmask(): number {
  const mask = process.umask(0o022);
  process.umask(mask);
  return mask;
}

// Few objects on purpose: the self-test runs before every start.
function buildScratch(root: string): void {
  fs.mkdirSync(path.join(root, 'a', 'b'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(root, 'a', 'b', 'file.txt'), CONTENT);
  fs.symlinkSync('file.txt', path.join(root, 'a', 'b', 'leaf-link'));
  fs.symlinkSync('b', path.join(root, 'a', 'dir-link'));
  fs.writeFileSync(path.join(root, 'a', 'b', 'linked'), CONTENT);
  fs.linkSync(path.join(root, 'a', 'b', 'linked'), path.join(root, 'a', LISTED[2]!));
}

function runChecks(route: DescriptorRoute, root: string, rootFd: number): void {
  const project = PinnedDirectory.withRoute(rootFd, root, route);
  const truth = openFlags();

  let read: string;
  try {
    read = project.readTextFile('a/b/file.txt', 1024).text;
  } catch (err) {
    // The code, not the message: the message would name a scratch path as if it were a project file.
    throw new SelfTestFailure('a nested file opens', `refused as ${err instanceof ConfinementError ? err.code : (err as Error).message}`);
  }
  if (read !== CONTENT) throw new SelfTestFailure('a nested file opens', 'its content read back differently');

  const dirFd = project.openDirectory(['a', 'b']);
  try {
    const { fd } = openRegularFileAt(route, dirFd, 'file.txt', 'a/b/file.txt');
    try {
      let status: { fdFlags: number; statusFlags: number };
      try {
        status = descriptorStatus(route, fd);
      } catch (err) {
        throw new SelfTestFailure('the descriptor flags can be read', (err as Error).message);
      }
      if ((status.fdFlags & FD_CLOEXEC) === 0) throw new SelfTestFailure('the descriptor is close-on-exec', 'FD_CLOEXEC is not set');
      if ((status.statusFlags & truth.O_NONBLOCK) === 0) throw new SelfTestFailure('the descriptor is non-blocking', 'O_NONBLOCK is not set');
      if ((status.statusFlags & truth.O_ACCMODE) !== truth.O_RDONLY) throw new SelfTestFailure('the descriptor is read-only', 'it was opened for writing');
    } finally {
      fs.closeSync(fd);
    }
  } finally {
    fs.closeSync(dirFd);
  }

  expectRefusal('a symlink as leaf is refused', 'symlink', () => project.readTextFile('a/b/leaf-link', 1024));
  expectRefusal('a symlink as directory is refused', 'symlink', () => project.readTextFile('a/dir-link/file.txt', 1024));
  expectRefusal('a symlinked directory is refused', 'symlink', () => project.openDirectory(['a', 'dir-link']));
  expectRefusal('a file opened as a directory is refused', 'not_directory', () => project.openDirectory(['a', 'b', 'file.txt']));
  expectRefusal('a file used as a directory is refused', 'not_directory', () => project.readTextFile('a/b/file.txt/x', 1024));
  expectRefusal('a hardlinked file is refused', 'hardlinked', () => project.readTextFile(`a/${LISTED[2]!}`, 1024));
  expectRefusal('a directory as leaf is refused', 'not_regular', () => project.readTextFile('a/b', 1024));
  expectRefusal('".." is refused', 'invalid_path', () => project.readTextFile('a/../a/b/file.txt', 1024));
  if (route.openBeneath !== undefined) {
    try {
      fs.closeSync(route.openBeneath(rootFd, ['a', '..', '..', path.basename(root), 'a', 'b', 'file.txt'], fileFlags(route)));
      throw new SelfTestFailure('a path leaving the directory is refused by the kernel', 'it opened');
    } catch (err) {
      if (err instanceof SelfTestFailure) throw err;
    }
  }

  const listFd = project.openDirectory(['a']);
  try {
    checkListing(route, listFd, path.join(root, 'a'));
  } finally {
    fs.closeSync(listFd);
  }

  checkStorageCalls(route, root, rootFd);
}

/**
 * The route lists exactly what fs.readdirSync lists, byte for byte, and stops
 * at its limit. Node.js's own listing is the ground truth: a file system that
 * stores names decomposed (HFS+, ZFS with normalization=formD) returns the
 * non-ASCII name in NFD to both, and passes.
 */
function checkListing(route: DescriptorRoute, listFd: number, listPath: string, where = ''): void {
  const check = `a listing matches fs.readdirSync byte for byte${where}`;
  let listed: DirectoryListing;
  try {
    listed = route.list(listFd, LISTED.length + 1);
  } catch (err) {
    throw new SelfTestFailure(check, (err as Error).message);
  }
  const truth = (fs.readdirSync(listPath, { encoding: 'buffer' }) as Buffer[]).sort((a, b) => Buffer.compare(a, b));
  const got = [...listed.names].sort((a, b) => Buffer.compare(a, b));
  const same = got.length === truth.length && got.every((name, i) => name.equals(truth[i]!));
  if (listed.truncated || !same || truth.length !== LISTED.length) {
    throw new SelfTestFailure(
      check,
      `got ${JSON.stringify(got.map((n) => n.toString('hex')))}, expected ${JSON.stringify(truth.map((n) => n.toString('hex')))} (hex)`,
    );
  }
  if (!route.list(listFd, 2).truncated) throw new SelfTestFailure('a listing stops at its limit', 'it did not report more entries');
}

const S_ISGID = 0o2000;

/**
 * The mode bits a created entry is compared on: a directory made inside a setgid
 * directory inherits S_ISGID whatever mode was asked (mkdir(2), BSD group
 * semantics), and that bit grants nobody access, so a TMPDIR inside a setgid
 * folder is no wrong mode.
 */
function comparedModeBits(stat: fs.Stats, parent: fs.Stats): number {
  const inherited = stat.isDirectory() && (parent.mode & S_ISGID) !== 0 ? S_ISGID : 0;
  return stat.mode & 0o7777 & ~inherited;
}

/** Throws unless `shown` has exactly the permission bits `asked` under the umask (an inherited setgid bit aside). */
function expectMode(check: string, shown: string, stat: fs.Stats, parent: fs.Stats, asked: number, umask: number): void {
  const expected = asked & ~umask & 0o7777;
  const got = comparedModeBits(stat, parent);
  if (got !== expected)
    throw new SelfTestFailure(
      check,
      `${shown} has mode ${fileModeText(got)}, expected ${fileModeText(expected)} (${fileModeText(asked)} under umask ${fileModeText(umask)})`,
    );
}

function checkStorageCalls(route: DescriptorRoute, root: string, rootFd: number): void {
  const f = route.flags;
  const check = 'the storage calls create, rename and remove';
  const umask = currentUmask();
  try {
    route.mkdirAt(rootFd, 'made', 0o700);
    const madeDir = fs.lstatSync(path.join(root, 'made'));
    if (!madeDir.isDirectory()) throw new SelfTestFailure(check, 'mkdirat did not make a directory');
    expectMode(check, 'the created directory', madeDir, fs.fstatSync(rootFd), 0o700, umask);
    const madeFd = route.openAt(rootFd, 'made', f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW);
    try {
      const fd = route.openAt(madeFd, 'new', f.O_WRONLY | f.O_CREAT | f.O_EXCL | f.O_NOFOLLOW, 0o600);
      fs.writeSync(fd, CONTENT);
      fs.closeSync(fd);
      const made = fs.lstatSync(path.join(root, 'made', 'new'));
      if (!made.isFile()) throw new SelfTestFailure(check, 'the created file is not a regular file');
      expectMode(check, 'the created file', made, fs.fstatSync(madeFd), 0o600, umask);
      route.renameAt(madeFd, 'new', 'renamed');
      if (fs.readFileSync(path.join(root, 'made', 'renamed'), 'utf8') !== CONTENT || fs.existsSync(path.join(root, 'made', 'new'))) {
        throw new SelfTestFailure(check, 'rename did not move the file');
      }
      route.unlinkAt(madeFd, 'renamed');
      if (fs.existsSync(path.join(root, 'made', 'renamed'))) throw new SelfTestFailure(check, 'unlink left the file');
    } finally {
      fs.closeSync(madeFd);
    }
  } catch (err) {
    if (err instanceof SelfTestFailure) throw err;
    throw new SelfTestFailure(check, (err as Error).message);
  }
}

/**
 * Removes a scratch tree with plain readdir, unlink and rmdir. fs.rmSync's recursive removal runs
 * through C++ std::filesystem on newer Node.js, which calls libc's fdopendir: the very call a broken
 * route may have, and which must not take the server down after that route was refused.
 */
function removeScratch(dir: string): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const inner = path.join(dir, entry.name);
    try {
      if (entry.isDirectory()) removeScratch(inner);
      else fs.unlinkSync(inner);
    } catch {
      // Best effort: a scratch entry left behind costs nothing but space in the temporary folder.
    }
  }
  try {
    fs.rmdirSync(dir);
  } catch {
    // As above.
  }
}

/**
 * Proves `route` in a fresh private scratch directory; throws SelfTestFailure
 * naming the failed check. Returns the device the scratch directory was on.
 */
export function selfTestRoute(route: DescriptorRoute): number {
  let root: string;
  try {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-confinement-')));
    buildScratch(root);
  } catch (err) {
    throw new SelfTestFailure('a scratch directory can be set up', `${os.tmpdir()}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const rootFd = fs.openSync(root, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    try {
      runChecks(route, root, rootFd);
      return fs.fstatSync(rootFd).dev;
    } finally {
      fs.closeSync(rootFd);
    }
  } catch (err) {
    if (err instanceof SelfTestFailure) throw err;
    throw new SelfTestFailure('the self-test ran', (err as Error).message);
  } finally {
    removeScratch(root);
  }
}

/** The folder, in the project's storage, that the probes on the project's own file system use (removed after). */
const PROJECT_PROBE_PREFIX = 'route-probe-';

/**
 * The probes that depend on the file system rather than on the route's code
 * (a symlink as file and as directory refused, a hardlinked file refused, the
 * listing byte for byte) run again on the project's own file system, in a
 * private scratch folder inside `.symbiont/`: a project on NFS, SMB or a FUSE
 * mount is proven where it lives. Runs only where `.symbiont/` already exists
 * and only this user can change it (the probe never creates the storage, and
 * a scratch folder others could change proves nothing); returns why it did not
 * run (also when the scratch cannot be made there: a read-only project is
 * still readable, and when the project is on the file system the self-test
 * just used, `provenDevice`), or undefined when it passed. Throws SelfTestFailure when a
 * probe fails.
 */
export function probeProjectFileSystem(
  route: DescriptorRoute,
  projectFd: number,
  projectPath: string,
  provenDevice: number,
  memory?: ProbeMemory,
): string | undefined {
  const f = route.flags;
  let storageFd: number;
  try {
    storageFd = route.openAt(projectFd, '.symbiont', f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW);
  } catch {
    return 'the project has no .symbiont/ yet, so its file system is probed from the next start';
  }
  let root: string | undefined;
  try {
    const storage = fs.fstatSync(storageFd);
    if (storage.uid !== process.geteuid?.() || (storage.mode & 0o022) !== 0) return '.symbiont/ can be changed by other users, so no probe runs there';
    // The self-test has just run on this very file system: nothing more to learn, and a start saved the cost.
    if (storage.dev === provenDevice) return 'the project shares its file system with the temporary directory, where the self-test ran';
    // A file system (device and type) where this route passed before on this system is not probed again.
    const fileSystem = `${storage.dev} ${fs.statfsSync(path.join(projectPath, '.symbiont')).type}`;
    if (memory?.has(fileSystem)) return 'proven on the project file system at an earlier start (remembered)';
    try {
      root = fs.mkdtempSync(path.join(projectPath, '.symbiont', PROJECT_PROBE_PREFIX));
      buildScratch(root);
    } catch (err) {
      // A read-only project, or one whose file system has no symlinks or hard links, can still be read: say so, refuse nothing.
      return `no probe could be set up in .symbiont/ (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
    // The scratch folder made by path must be the one in the .symbiont/ held by descriptor.
    const scratchFd = route.openAt(storageFd, path.basename(root), f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW);
    try {
      const byPath = fs.statSync(root);
      const byDescriptor = fs.fstatSync(scratchFd);
      if (byPath.dev !== byDescriptor.dev || byPath.ino !== byDescriptor.ino)
        throw new SelfTestFailure('the scratch directory in .symbiont/ is the one made', 'it was replaced');
      const scratch = PinnedDirectory.withRoute(scratchFd, root, route);
      expectRefusal('a symlink as leaf is refused on the project file system', 'symlink', () => scratch.readTextFile('a/b/leaf-link', 1024));
      expectRefusal('a symlink as directory is refused on the project file system', 'symlink', () => scratch.readTextFile('a/dir-link/file.txt', 1024));
      expectRefusal('a hardlinked file is refused on the project file system', 'hardlinked', () => scratch.readTextFile(`a/${LISTED[2]!}`, 1024));
      const listFd = scratch.openDirectory(['a']);
      try {
        checkListing(route, listFd, path.join(root, 'a'), ' on the project file system');
      } finally {
        fs.closeSync(listFd);
      }
    } finally {
      fs.closeSync(scratchFd);
    }
    memory?.add(fileSystem);
    return undefined;
  } catch (err) {
    if (err instanceof SelfTestFailure) throw err;
    throw new SelfTestFailure('the probe on the project file system ran', (err as Error).message);
  } finally {
    fs.closeSync(storageFd);
    if (root !== undefined) removeScratch(root);
  }
}

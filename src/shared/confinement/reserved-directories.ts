import fs from 'node:fs';
import type { DescriptorRoute } from './descriptor-route.js';
import { POLICY_DISCOVERY_MAX_ENTRIES, RESERVED_POLICY_DIRECTORIES_MAX } from '../limits.js';
import { ConfinementError, decodeUtf8Strict } from './path-rules.js';

// policies/ and .symbiont/ are refused by their spelling in path-rules.ts, but
// a spelling is not what a directory is: on a case-insensitive volume (APFS and
// HFS+ by default on macOS) Policies/ and POLICIES/ are policies/, and a bind
// mount (Linux) or any other mount of the same tree reaches it under a name of
// its choosing. So these directories are also reserved by what they are: the
// device and inode of policies/ and everything below it, and of .symbiont/ and
// the folders directly in it, found at startup. A walk that reaches one of them
// under any other path is refused. Only walks whose first component is spelled
// `policies` or `.symbiont` are exempt, and those are already refused to callers
// by the path rules (the policy loader and the storage use them on purpose).

/** The top-level names reserved to the server. */
const RESERVED_NAMES: readonly string[] = ['policies', '.symbiont'];

/**
 * The startup look, one walk each, `.symbiont/` first: `.symbiont/` holds journals, so only the
 * folders directly in it are recorded, always and outside the budget; policies/ is recorded whole,
 * with no depth bound, within RESERVED_POLICY_DIRECTORIES_MAX folders. A tree past the budget, a
 * folder with more entries than can be listed, or a folder that cannot be listed would leave a
 * partial set, so the server refuses to start instead (ReservedDirectoriesError).
 */
const WALKS: ReadonlyArray<{ name: string; depth: number; budgeted: boolean }> = [
  { name: '.symbiont', depth: 1, budgeted: false },
  { name: 'policies', depth: Number.POSITIVE_INFINITY, budgeted: true },
];
/** Past the budget the walk goes on counting (not recording) up to this many folders, to say how many there are. */
const COUNT_CEILING = RESERVED_POLICY_DIRECTORIES_MAX * 16;
/** What an openAt of a listed name may say when it is no directory to reserve (absent, a file, a symlink). */
const NOT_A_DIRECTORY = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EMLINK']);

/** The reserved directories cannot all be recorded: the server must not start (one line, naming the limit or the folder). */
export class ReservedDirectoriesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReservedDirectoriesError';
  }
}

function identity(stat: fs.Stats): string {
  return `${stat.dev}:${stat.ino}`;
}

/** The reserved directories of one pinned project, by device and inode. */
export class ReservedDirectories {
  private readonly byIdentity = new Map<string, string>();
  /** The project root's device, known once record() has run: directories on another one are refused. */
  private rootDevice: number | undefined;

  get size(): number {
    return this.byIdentity.size;
  }

  /** Whether a walk starting with `first` is one the path rules already decide (exempt from the identity check). */
  static spelled(first: string | undefined): boolean {
    return first !== undefined && RESERVED_NAMES.includes(first);
  }

  /**
   * Throws the one-line refusal when the open directory `fd` (reached as `shown`) is a reserved one,
   * or is on another device than the project root; the caller closes `fd`. A mount inside the project
   * (an overlay, a tmpfs, another disk) reports a device and inodes of its own, so what it exposes,
   * policies/ as an overlay's lower layer say, cannot be told by identity: it is not descended into.
   */
  refuseReserved(fd: number, shown: string): void {
    const stat = fs.fstatSync(fd);
    const reserved = this.byIdentity.get(identity(stat));
    if (reserved !== undefined) {
      const rule = reserved.startsWith('policies')
        ? 'the policies directory is not readable through this tool'
        : "the server's own storage (.symbiont/) is not readable through this tool";
      throw new ConfinementError('invalid_path', `path refused: ${shown} is ${reserved}/ reached under another name; ${rule}`);
    }
    if (this.rootDevice !== undefined && stat.dev !== this.rootDevice) {
      throw new ConfinementError(
        'other_device',
        `path refused: ${shown} is on another file system than the project (a mount point inside it); directories mounted inside the project are not read through this tool`,
      );
    }
  }

  /**
   * Records policies/ (and below) and .symbiont/ (and its folders) as they are
   * now, reached through `route` from the project root `rootFd`. Called at
   * startup, and again once the storage exists (a first start creates it).
   */
  record(route: DescriptorRoute, rootFd: number): void {
    const f = route.flags;
    const directoryFlags = f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW;
    // Built apart and swapped in whole: a refused look leaves no partial set behind.
    const found = new Map<string, string>();
    let counted = 0;
    const visit = (parentFd: number, name: string, shown: string, depth: number, budgeted: boolean): void => {
      if (budgeted && counted >= COUNT_CEILING) return;
      let fd: number;
      try {
        fd = route.openAt(parentFd, name, directoryFlags);
      } catch (err) {
        if (NOT_A_DIRECTORY.has((err as NodeJS.ErrnoException).code ?? '')) return;
        throw new ReservedDirectoriesError(`${shown}/ cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'}), so it cannot be reserved`);
      }
      try {
        // policies/ itself is not counted: the limit is on the folders below it.
        if (budgeted && shown !== name) counted++;
        if (!budgeted || counted <= RESERVED_POLICY_DIRECTORIES_MAX) found.set(identity(fs.fstatSync(fd)), shown);
        if (depth <= 0) return;
        let listed;
        try {
          listed = route.list(fd, POLICY_DISCOVERY_MAX_ENTRIES);
        } catch (err) {
          throw new ReservedDirectoriesError(
            `${shown}/ cannot be listed (${(err as NodeJS.ErrnoException).code ?? 'error'}), so what is below it cannot be reserved`,
          );
        }
        if (listed.truncated) {
          throw new ReservedDirectoriesError(
            `${shown}/ has more than ${POLICY_DISCOVERY_MAX_ENTRIES} entries; at most ${POLICY_DISCOVERY_MAX_ENTRIES} are listed to reserve what is in it`,
          );
        }
        for (const raw of listed.names) {
          let entry: string;
          try {
            entry = decodeUtf8Strict(raw, 'entry');
          } catch {
            // Decoded loosely it would name another file, and the folder it names would go unrecorded.
            throw new ReservedDirectoriesError(`${shown}/ holds a name that is not valid UTF-8, so what it names cannot be reserved`);
          }
          visit(fd, entry, `${shown}/${entry}`, depth - 1, budgeted);
        }
      } finally {
        fs.closeSync(fd);
      }
    };
    for (const walk of WALKS) visit(rootFd, walk.name, walk.name, walk.depth, walk.budgeted);
    if (counted > RESERVED_POLICY_DIRECTORIES_MAX) {
      const count = counted >= COUNT_CEILING ? `at least ${COUNT_CEILING}` : String(counted);
      throw new ReservedDirectoriesError(
        `policies/ holds ${count} folders; at most ${RESERVED_POLICY_DIRECTORIES_MAX} can be recorded to keep them unreachable under other names, so the server does not start`,
      );
    }
    for (const [key, shown] of found) this.byIdentity.set(key, shown);
    this.rootDevice = fs.fstatSync(rootFd).dev;
  }
}

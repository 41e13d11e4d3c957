import fs from 'node:fs';
import type { DescriptorRoute } from './descriptor-route.js';
import { ConfinementError } from './path-rules.js';

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
export const RESERVED_NAMES: readonly string[] = ['policies', '.symbiont'];

/** How deep below policies/ the startup look goes (.symbiont/ holds journals: only its own folders are looked at). */
const DEPTH_BY_NAME: Readonly<Record<string, number>> = { policies: 8, '.symbiont': 1 };
/** Bounds on the startup look, so a huge tree cannot stall a start. */
const MAX_DIRECTORIES = 256;
const MAX_ENTRIES_PER_DIRECTORY = 1024;

function identity(stat: fs.Stats): string {
  return `${stat.dev}:${stat.ino}`;
}

/** The reserved directories of one pinned project, by device and inode. */
export class ReservedDirectories {
  private readonly byIdentity = new Map<string, string>();

  get size(): number {
    return this.byIdentity.size;
  }

  /** Whether a walk starting with `first` is one the path rules already decide (exempt from the identity check). */
  static spelled(first: string | undefined): boolean {
    return first !== undefined && RESERVED_NAMES.includes(first);
  }

  /** Throws the one-line refusal when the open directory `fd` (reached as `shown`) is a reserved one; the caller closes `fd`. */
  refuseReserved(fd: number, shown: string): void {
    const reserved = this.byIdentity.get(identity(fs.fstatSync(fd)));
    if (reserved === undefined) return;
    const rule = reserved.startsWith('policies')
      ? 'the policies directory is not readable through this tool'
      : "the server's own storage (.symbiont/) is not readable through this tool";
    throw new ConfinementError('invalid_path', `path refused: ${shown} is ${reserved}/ reached under another name; ${rule}`);
  }

  /**
   * Records policies/ (and below) and .symbiont/ (and its folders) as they are
   * now, reached through `route` from the project root `rootFd`. Called at
   * startup, and again once the storage exists (a first start creates it).
   */
  record(route: DescriptorRoute, rootFd: number): void {
    const f = route.flags;
    const directoryFlags = f.O_RDONLY | f.O_DIRECTORY | f.O_NOFOLLOW;
    let budget = MAX_DIRECTORIES;
    const visit = (parentFd: number, name: string, shown: string, depth: number): void => {
      if (budget <= 0) return;
      let fd: number;
      try {
        fd = route.openAt(parentFd, name, directoryFlags);
      } catch {
        return; // absent, a file or a symlink: nothing reachable to reserve
      }
      budget--;
      try {
        this.byIdentity.set(identity(fs.fstatSync(fd)), shown);
        if (depth <= 0) return;
        const listed = route.list(fd, MAX_ENTRIES_PER_DIRECTORY);
        for (const raw of listed.names) visit(fd, raw.toString('utf8'), `${shown}/${raw.toString('utf8')}`, depth - 1);
      } catch {
        // A listing that fails leaves what was recorded so far.
      } finally {
        fs.closeSync(fd);
      }
    };
    for (const name of RESERVED_NAMES) visit(rootFd, name, name, DEPTH_BY_NAME[name] ?? 0);
  }
}

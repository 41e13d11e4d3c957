import fs from 'node:fs';
import path from 'node:path';
import { localGroup, userNameOf, type AccountFiles } from './local-accounts.js';
import type { PinnedDirectory } from '../confinement/index.js';

// Who may rename what the project holds. The policy files and the audit
// storage are checked themselves (policy-file-modes.ts, private-directory.ts),
// but a user who can write to a directory above them can rename them away:
// `mv policies policies-off` in a shared project root turns a forbid into "no
// policy files: default permission". So, as OpenSSH's StrictModes does for
// authorized_keys (sshd_config(5), StrictModes; checked 2026-12), every
// directory from the project root up to / must be changeable by the server's
// user and root alone: owned by one of them, not writable by others, and
// writable by its group only when that group has no member but them (the
// user-private-group convention, umask 002 on Debian and Ubuntu). Write access
// under the sticky bit (as /tmp has) is harmless: it lets others add entries,
// never rename or remove the server user's. The check runs at startup; a mode
// changed later matters at the next start, when policies load again.

const ROOT_UID = 0;
const GROUP_WRITE = 0o020;
const OTHER_WRITE = 0o002;
const STICKY = 0o1000;

/** Why users other than `serverUid` and root can change this directory's entries, with the fix; undefined when none can. */
export function directoryWritersProblem(stat: fs.Stats, shown: string, serverUid: number, accounts?: AccountFiles): string | undefined {
  const trusted = (uid: number | undefined) => uid === serverUid || uid === ROOT_UID;
  const consequence = 'another user could rename policies/ or .symbiont/ beneath it';
  if (!trusted(stat.uid)) {
    const owner = userNameOf(stat.uid, accounts);
    const serverName = userNameOf(serverUid, accounts) ?? String(serverUid);
    return `${shown} is owned by uid ${stat.uid}${owner ? ` (${owner})` : ''}, not by the server's user or root; ${consequence} (fix: chown ${serverName} ${shown}, or move the project)`;
  }
  if ((stat.mode & STICKY) !== 0) return undefined;
  const mode = (stat.mode & 0o7777).toString(8).padStart(4, '0');
  if ((stat.mode & OTHER_WRITE) !== 0) {
    return `${shown} is writable by every user (mode ${mode}) without the sticky bit; ${consequence} (fix: chmod o-w ${shown})`;
  }
  if ((stat.mode & GROUP_WRITE) !== 0) {
    const group = localGroup(stat.gid, accounts);
    if (group === undefined) {
      return `${shown} is writable by group ${stat.gid} (mode ${mode}), which /etc/group does not list, so its members cannot be checked; ${consequence} (fix: chmod g-w ${shown})`;
    }
    const others = group.members.filter((member) => !trusted(member.uid)).map((member) => member.name);
    if (others.length > 0) {
      return `${shown} is writable by group ${group.name} (mode ${mode}), whose members include ${others.join(', ')}; ${consequence} (fix: chmod g-w ${shown})`;
    }
  }
  return undefined;
}

/**
 * Why the project cannot be trusted to keep its policies and audit storage in
 * place: the problems of the project root and each directory above it, joined
 * on one line; undefined when there are none (or no uids, off POSIX).
 */
export function projectDirectoriesProblem(project: PinnedDirectory, accounts?: AccountFiles): string | undefined {
  const serverUid = process.getuid?.();
  if (serverUid === undefined || !project.access.available) return undefined;
  const problems: string[] = [];
  // Walked through the pinned descriptor (each parent opened as ".." of the one
  // below, through the confinement route), so the directories checked are the
  // ones that hold the project now, whatever its path says.
  const route = project.route;
  const parentFlags = route.flags.O_RDONLY | route.flags.O_DIRECTORY;
  let shown = project.displayPath;
  let currentFd = project.fd;
  let stat = fs.fstatSync(currentFd);
  try {
    for (;;) {
      const problem = directoryWritersProblem(stat, shown, serverUid, accounts);
      if (problem !== undefined) problems.push(problem);
      let parentFd: number;
      try {
        parentFd = route.openAt(currentFd, '..', parentFlags);
      } catch (err) {
        // A directory that cannot be checked cannot be trusted.
        problems.push(`${path.dirname(shown)} cannot be checked (${(err as NodeJS.ErrnoException).code ?? 'error'}); the directories holding the project must be searchable by the server's user`);
        break;
      }
      if (currentFd !== project.fd) fs.closeSync(currentFd);
      currentFd = parentFd;
      const parent = fs.fstatSync(currentFd);
      if (parent.dev === stat.dev && parent.ino === stat.ino) break; // "/" is its own parent
      stat = parent;
      shown = path.dirname(shown);
    }
  } finally {
    if (currentFd !== project.fd) fs.closeSync(currentFd);
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

import fs from 'node:fs';
import path from 'node:path';
import type { PinnedDirectory } from '../confinement/index.js';
import {
  ACL_PERM,
  ACL_TAG,
  aclReaderProblem,
  NFS4_ACE_FLAG,
  NFS4_ACE_TYPE,
  NFS4_WRITE_MASK,
  readDirectoryAcl,
  removeAclCommand,
  type DirectoryAcl,
  type PosixAclEntry,
} from './directory-acl.js';
import { localGroup, membersOutOfReach, unreadAccountFiles, userNameOf, type AccountFiles } from './local-accounts.js';
import { fileModeText } from '../text/file-mode.js';

// Who may rename what the project holds. The policy files and the audit
// storage are checked themselves (policy-file-modes.ts, private-directory.ts),
// but a user who can write to a directory above them can rename them away:
// `mv policies policies-off` in a shared project root turns a forbid into "no
// policy files: default permission". So, as OpenSSH's StrictModes does for
// authorized_keys (sshd_config(5), StrictModes; checked 2026-12), every
// directory from the project root up to / must be changeable by the server's
// user and root alone, as the kernel decides who may write: the owner, the
// mode bits, the extended ACL (directory-acl.ts), and a group's members on
// every /etc/group line of its gid (local-accounts.ts). A group is trusted
// only when its members are the server's user and root and nothing outside
// the local files can add others (the user-private-group convention, umask
// 002 on Debian and Ubuntu, passes). Write access under the sticky bit (as
// /tmp has) is harmless: it lets others add entries, never rename or remove
// the server user's. The check runs at startup; a change made later matters
// at the next start, when policies load again.

const ROOT_UID = 0;
const GROUP_WRITE = 0o020;
const OTHER_WRITE = 0o002;
const STICKY = 0o1000;
const CONSEQUENCE = 'another user could rename policies/ or .symbiont/ beneath it';
/** staff, the primary group macOS gives every local user (dscl . -read /Users/NAME PrimaryGroupID). */
const MACOS_STAFF_GID = 20;

/** What the writer check reads of a directory's status. */
export type DirectoryStatus = Pick<fs.Stats, 'uid' | 'gid' | 'mode'>;

export interface WriterCheckOptions {
  /** The directory's extended ACL (none when absent). */
  acl?: DirectoryAcl;
  /** The account files (tests only). */
  accounts?: AccountFiles;
  /** The platform whose rules apply (tests only; process.platform otherwise). */
  platform?: string;
  /** The server user's primary gid (tests only; process.getgid() otherwise). */
  serverGid?: number;
  /** Each gid whose members the check had to judge is added here (so a caller can say what it could not read). */
  groupsJudged?: Set<number>;
}

function permText(perm: number): string {
  return `${perm & ACL_PERM.READ ? 'r' : '-'}${perm & ACL_PERM.WRITE ? 'w' : '-'}${perm & ACL_PERM.EXECUTE ? 'x' : '-'}`;
}

/**
 * Why users other than `serverUid` and root can change the entries of the
 * directory `shown` with this status and ACL, each writer with how it writes
 * and the fix, joined on one line; undefined when none can.
 */
export function directoryWritersProblem(stat: DirectoryStatus, shown: string, serverUid: number, options: WriterCheckOptions = {}): string | undefined {
  const { acl = { kind: 'none' }, accounts, platform = process.platform, serverGid = process.getgid?.(), groupsJudged } = options;
  const trusted = (uid: number | undefined) => uid === serverUid || uid === ROOT_UID;
  if (!trusted(stat.uid)) {
    const owner = userNameOf(stat.uid, accounts);
    const serverName = userNameOf(serverUid, accounts) ?? String(serverUid);
    return `${shown} is owned by uid ${stat.uid}${owner ? ` (${owner})` : ''}, not by the server's user or root; ${CONSEQUENCE} (fix: chown ${serverName} ${shown}, or move the project)`;
  }
  if (acl.kind === 'distrusted') {
    return `${shown} cannot be proved safe: ${acl.why}; ${CONSEQUENCE} (fix: ${removeAclCommand(process.platform)} ${shown}, or move the project)`;
  }
  if ((stat.mode & STICKY) !== 0) return undefined;
  const mode = fileModeText(stat.mode);
  if ((stat.mode & OTHER_WRITE) !== 0) {
    return `${shown} is writable by every user (mode ${mode}) without the sticky bit; ${CONSEQUENCE} (fix: chmod o-w ${shown})`;
  }

  /** Why group `gid`, writing `how`, may include someone besides the server's user and root; undefined when it cannot. */
  const groupProblem = (gid: number, how: string, fix: string): string | undefined => {
    groupsJudged?.add(gid);
    if (platform === 'darwin') {
      if (gid === serverGid && gid !== MACOS_STAFF_GID) return undefined;
      const name = localGroup(gid, accounts)?.name ?? String(gid);
      const whose = gid === MACOS_STAFF_GID ? 'the primary group of every local user' : "not the server user's own primary group";
      return `${shown} is writable by group ${name} ${how}, ${whose}; macOS keeps group members in Open Directory, which this server does not query, so members besides the server's user cannot be ruled out; ${CONSEQUENCE} (fix: ${fix})`;
    }
    const group = localGroup(gid, accounts);
    if (group === undefined) {
      return `${shown} is writable by group ${gid} ${how}, which /etc/group does not list, so its members cannot be checked; ${CONSEQUENCE} (fix: ${fix})`;
    }
    const others = group.members.filter((member) => !trusted(member.uid)).map((member) => (member.via ? `${member.name} (${member.via})` : member.name));
    if (others.length > 0)
      return `${shown} is writable by group ${group.name} ${how}, whose members include ${others.join(', ')}; ${CONSEQUENCE} (fix: ${fix})`;
    if (group.passwordIn !== undefined) {
      return `${shown} is writable by group ${group.name} ${how}, which has a password in ${group.passwordIn}, so whoever knows it can join with newgrp; ${CONSEQUENCE} (fix: ${fix}, or gpasswd -r ${group.name})`;
    }
    const outOfReach = membersOutOfReach(accounts);
    if (outOfReach !== undefined) {
      return `${shown} is writable by group ${group.name} ${how}, and ${outOfReach}, so members besides the server's user cannot be ruled out; ${CONSEQUENCE} (fix: ${fix})`;
    }
    return undefined;
  };

  const problems: string[] = [];
  const entries: PosixAclEntry[] = acl.kind === 'posix' ? acl.entries : [];
  // With an ACL the group bits of the mode are its mask; each entry but the owner's and other's writes only as far as the mask allows.
  const mask = entries.find((e) => e.tag === ACL_TAG.MASK)?.perm ?? ACL_PERM.READ | ACL_PERM.WRITE | ACL_PERM.EXECUTE;
  const writes = (e: PosixAclEntry) => (e.perm & mask & ACL_PERM.WRITE) !== 0;
  const maskText = entries.some((e) => e.tag === ACL_TAG.MASK) ? `, mask ${permText(mask)}` : '';
  const groupObject = entries.find((e) => e.tag === ACL_TAG.GROUP_OBJ);
  if (groupObject !== undefined) {
    if (writes(groupObject)) {
      const problem = groupProblem(stat.gid, `(mode ${mode}, ACL entry group::${permText(groupObject.perm)}${maskText})`, `chmod g-w ${shown}`);
      if (problem !== undefined) problems.push(problem);
    }
  } else if ((stat.mode & GROUP_WRITE) !== 0) {
    const problem = groupProblem(stat.gid, `(mode ${mode})`, `chmod g-w ${shown}`);
    if (problem !== undefined) problems.push(problem);
  }
  for (const entry of entries) {
    if (!writes(entry)) continue;
    if (entry.tag === ACL_TAG.USER && !trusted(entry.id)) {
      const name = userNameOf(entry.id, accounts);
      const shownUser = name ?? String(entry.id);
      problems.push(
        `${shown} is writable by user ${name ? `${name} (uid ${entry.id})` : `uid ${entry.id}`} through its ACL entry user:${shownUser}:${permText(entry.perm)}${maskText}; ${CONSEQUENCE} (fix: setfacl -x u:${shownUser} ${shown})`,
      );
    } else if (entry.tag === ACL_TAG.GROUP) {
      const shownGroup = localGroup(entry.id, accounts)?.name ?? String(entry.id);
      const problem = groupProblem(
        entry.id,
        `through its ACL entry group:${shownGroup}:${permText(entry.perm)}${maskText}`,
        `setfacl -x g:${shownGroup} ${shown}`,
      );
      if (problem !== undefined) problems.push(problem);
    }
  }
  if (acl.kind === 'nfs4') {
    // Deny entries take nothing away here (an allow entry before them may still grant), and
    // inherit-only entries apply to what is created inside, not to this directory.
    for (const ace of acl.aces) {
      if (ace.type !== NFS4_ACE_TYPE.ALLOW || (ace.flag & NFS4_ACE_FLAG.INHERIT_ONLY) !== 0 || (ace.mask & NFS4_WRITE_MASK) === 0) continue;
      const how = `through its NFSv4 ACL entry allowing ${ace.who} access mask 0x${ace.mask.toString(16)}`;
      const fix = `remove the entry with nfs4_setfacl -x (nfs4_getfacl ${shown} lists it)`;
      if (ace.who === 'OWNER@') continue;
      if (ace.who === 'GROUP@') {
        if ((stat.mode & GROUP_WRITE) !== 0) continue; // judged above from the mode bits
        const problem = groupProblem(stat.gid, how, fix);
        if (problem !== undefined) problems.push(problem);
      } else if (ace.who === 'EVERYONE@') {
        problems.push(`${shown} is writable by every user ${how}; ${CONSEQUENCE} (fix: ${fix})`);
      } else {
        const kind = (ace.flag & NFS4_ACE_FLAG.IDENTIFIER_GROUP) !== 0 ? 'group' : 'principal';
        problems.push(`${shown} is writable by ${kind} ${ace.who} ${how}, which this server cannot map to local users; ${CONSEQUENCE} (fix: ${fix})`);
      }
    }
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

function sameIdentity(a: fs.BigIntStats, b: fs.BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function lstatIdentity(shown: string): fs.BigIntStats | undefined {
  try {
    return fs.lstatSync(shown, { bigint: true });
  } catch {
    return undefined;
  }
}

/** The status of the project root and each directory above it, reached as ".." from the pinned descriptor; or why one cannot be reached. */
function holdingDirectories(project: PinnedDirectory): { statuses: fs.BigIntStats[]; problem?: string } {
  const route = project.route;
  // O_PATH (Linux) opens a directory one may search but not read (mode 0711):
  // checking who can write it needs only its status. Elsewhere the walk reads.
  const searchOnly = route.flags.O_PATH !== 0;
  const parentFlags = (searchOnly ? route.flags.O_PATH : route.flags.O_RDONLY) | route.flags.O_DIRECTORY;
  const needed = searchOnly ? "searchable by the server's user" : "readable by the server's user (outside Linux the walk opens each one for reading)";
  const statuses: fs.BigIntStats[] = [];
  let shown = project.displayPath;
  let currentFd = project.fd;
  let stat = fs.fstatSync(currentFd, { bigint: true });
  try {
    for (;;) {
      statuses.push(stat);
      let parentFd: number;
      try {
        parentFd = route.openAt(currentFd, '..', parentFlags);
      } catch (err) {
        // A directory that cannot be checked cannot be trusted.
        const problem = `${path.dirname(shown)} cannot be checked (${(err as NodeJS.ErrnoException).code ?? 'error'}); the directories holding the project must be ${needed}`;
        return { statuses, problem };
      }
      if (currentFd !== project.fd) fs.closeSync(currentFd);
      currentFd = parentFd;
      const parent = fs.fstatSync(currentFd, { bigint: true });
      if (sameIdentity(parent, stat)) return { statuses }; // "/" is its own parent
      stat = parent;
      shown = path.dirname(shown);
    }
  } finally {
    if (currentFd !== project.fd) fs.closeSync(currentFd);
  }
}

/** What the walk found: the problem (undefined when none), and what it could not read. */
export interface ProjectDirectoriesCheck {
  problem: string | undefined;
  /** E.g. "/etc/gshadow (EACCES)": files that exist but could not be read while a group's members were judged. */
  unread: string[];
  /** E.g. "/mnt/share: its file system (cifs) exposes neither a POSIX nor an NFSv4 ACL ...": levels judged by their mode bits alone. */
  aclsUnread: string[];
}

/**
 * Why the project cannot be trusted to keep its policies and audit storage in
 * place: the problems of the project root and each directory above it, joined
 * on one line; undefined when there are none (or no uids, off POSIX).
 */
export function projectDirectoriesProblem(project: PinnedDirectory, accounts?: AccountFiles): string | undefined {
  return checkProjectDirectories(project, accounts).problem;
}

/** projectDirectoriesProblem, with the account files a group's judgement needed but could not read (for `symbi check`). */
export function checkProjectDirectories(project: PinnedDirectory, accounts?: AccountFiles): ProjectDirectoriesCheck {
  const groupsJudged = new Set<number>();
  const aclsUnread: string[] = [];
  const problem = walkProblem(project, groupsJudged, aclsUnread, accounts);
  return { problem, unread: groupsJudged.size > 0 ? unreadAccountFiles(accounts) : [], aclsUnread };
}

function walkProblem(project: PinnedDirectory, groupsJudged: Set<number>, aclsUnread: string[], accounts?: AccountFiles): string | undefined {
  const serverUid = process.getuid?.();
  if (serverUid === undefined || !project.access.available) return undefined;
  // Without the ACL reader no level can be judged: one problem says so, rather than one per level.
  const noReader = aclReaderProblem();
  if (noReader !== undefined) {
    return `${project.displayPath} and the directories above it cannot be checked for other writers: ${noReader}; ${CONSEQUENCE} (fix: start the server without any library preloaded into it that replaces these C calls (LD_PRELOAD, /etc/ld.so.preload); if there is none, report this line with the system's name and version)`;
  }
  const problems: string[] = [];
  // The directories checked are the ones that hold the pinned descriptor now
  // (its ".." chain), whatever its path says. An ACL can only be read by path
  // (Node.js has no xattr call, and fgetxattr refuses the walk's O_PATH
  // descriptors with EBADF), so each level's path must name that very
  // directory, by device and inode, before and after its ACL is read. Whoever
  // could swap a path between the two can write to a directory above it,
  // which the walk reports.
  const moved = (dir: string) =>
    `${dir} cannot be checked: it is not the directory that holds the project (was the project moved while the server started?); start the server again on the project where it is now`;
  const { statuses, problem: unreachable } = holdingDirectories(project);
  let shown = project.displayPath;
  for (const [level, stat] of statuses.entries()) {
    if (level > 0) {
      if (path.dirname(shown) === shown) {
        problems.push(moved(shown));
        break;
      }
      shown = path.dirname(shown);
    }
    const before = lstatIdentity(shown);
    const acl = before !== undefined && sameIdentity(before, stat) ? readDirectoryAcl(shown) : undefined;
    const after = acl === undefined ? undefined : lstatIdentity(shown);
    if (acl === undefined || after === undefined || !sameIdentity(after, stat)) {
      problems.push(moved(shown));
      break;
    }
    if (acl.kind === 'unreadable') aclsUnread.push(`${shown}: ${acl.why}`);
    const problem = directoryWritersProblem({ uid: Number(stat.uid), gid: Number(stat.gid), mode: Number(stat.mode) }, shown, serverUid, {
      acl,
      accounts,
      groupsJudged,
    });
    if (problem !== undefined) problems.push(problem);
  }
  if (unreachable !== undefined) problems.push(unreachable);
  else if (problems.length === 0 && path.dirname(shown) !== shown) problems.push(moved(shown));
  return problems.length === 0 ? undefined : problems.join('; ');
}

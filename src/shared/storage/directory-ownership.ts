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
  readDescriptorAcl,
  readDirectoryAcl,
  removeAclCommand,
  type DirectoryAcl,
  type PosixAclEntry,
} from './directory-acl.js';
import { localGroup, membersOutOfReach, unreadAccountFiles, userNameOf, type AccountFiles } from './local-accounts.js';
import { macAccounts, macGroupName, macGroupProblem, type MacAccounts } from './macos-groups.js';
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

/** What the writer check reads of a directory's status. */
export type DirectoryStatus = Pick<fs.Stats, 'uid' | 'gid' | 'mode'>;

/**
 * Which level is judged: `holding`, the project root or a directory above it, whose
 * entries could be renamed (the default); or, below the root, a `folder` the server
 * reads or keeps (policies/, agents/, .symbiont/...) or a `file` in one, whose content
 * matters. Below the root the sticky bit excuses nothing (adding a policy file is the
 * attack), a folder's inheritable entries count, and the fixes for a folder are recursive.
 */
export type WriterCheckLevel = 'holding' | 'folder' | 'file';

export interface WriterCheckOptions {
  /** The directory's extended ACL (none when absent). */
  acl?: DirectoryAcl;
  /** What is judged (holding when absent). */
  level?: WriterCheckLevel;
  /** The account files (tests only). */
  accounts?: AccountFiles;
  /** The platform whose rules apply (tests only; process.platform otherwise). */
  platform?: string;
  /** macOS: the local directory's users and groups and the search policy (tests only; read with dscl otherwise, macos-groups.ts). */
  macAccounts?: MacAccounts;
  /** Each gid whose members the check had to judge is added here (so a caller can say what it could not read). */
  groupsJudged?: Set<number>;
}

function permText(perm: number): string {
  return `${perm & ACL_PERM.READ ? 'r' : '-'}${perm & ACL_PERM.WRITE ? 'w' : '-'}${perm & ACL_PERM.EXECUTE ? 'x' : '-'}`;
}

const CONSEQUENCES: Record<WriterCheckLevel, string> = {
  holding: CONSEQUENCE,
  folder: 'another user could add, replace or rename what the server reads in it',
  file: 'another user could rewrite it',
};

/** The mode a new entry starts from under a folder's default ACL: its owner, group class (the mask, else the owning group) and other entries. */
function inheritedMode(defaults: readonly PosixAclEntry[]): number {
  const perm = (tag: number) => defaults.find((e) => e.tag === tag)?.perm ?? 0;
  const groupClass = defaults.some((e) => e.tag === ACL_TAG.MASK) ? perm(ACL_TAG.MASK) : perm(ACL_TAG.GROUP_OBJ);
  return (perm(ACL_TAG.USER_OBJ) << 6) | (groupClass << 3) | perm(ACL_TAG.OTHER);
}

/**
 * Why users other than `serverUid` and root can change the entries of the
 * directory `shown` (or, below the root, the folder or file: `options.level`)
 * with this status and ACL, each writer with how it writes and the fix,
 * joined on one line; undefined when none can.
 */
export function directoryWritersProblem(stat: DirectoryStatus, shown: string, serverUid: number, options: WriterCheckOptions = {}): string | undefined {
  const problems = writers(stat, shown, serverUid, options, false);
  const { acl = { kind: 'none' }, level = 'holding' } = options;
  // A folder's default ACL is what its new entries start with: judged as their own ACL would be.
  if (level === 'folder' && acl.kind === 'posix' && acl.defaults !== undefined && acl.defaults.length > 0) {
    const inherited = { ...stat, mode: inheritedMode(acl.defaults) };
    problems.push(...writers(inherited, shown, serverUid, { ...options, acl: { kind: 'posix', entries: acl.defaults } }, true));
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

/** What groupWriterProblem needs of the level being judged. */
interface GroupJudgement {
  shown: string;
  consequence: string;
  serverUid: number;
  options: WriterCheckOptions & { platform: string };
}

/** Why group `gid`, writing `how`, may include someone besides the server's user and root; undefined when it cannot. */
function groupWriterProblem(judged: GroupJudgement, gid: number, how: string, groupFix: string): string | undefined {
  const { shown, consequence, serverUid, options } = judged;
  const { accounts, platform, groupsJudged } = options;
  const trusted = (uid: number | undefined) => uid === serverUid || uid === ROOT_UID;
  groupsJudged?.add(gid);
  if (platform === 'darwin') {
    // Open Directory holds the members, not /etc/group: trusted only when its local records prove the group the user's alone.
    const directory = options.macAccounts ?? macAccounts();
    const why = macGroupProblem(gid, serverUid, directory);
    if (why === undefined) return undefined;
    const name = macGroupName(gid, directory) ?? String(gid);
    return `${shown} is writable by group ${name} ${how}, ${why}; ${consequence} (fix: ${groupFix})`;
  }
  const group = localGroup(gid, accounts);
  if (group === undefined) {
    return `${shown} is writable by group ${gid} ${how}, which /etc/group does not list, so its members cannot be checked; ${consequence} (fix: ${groupFix})`;
  }
  const others = group.members.filter((member) => !trusted(member.uid)).map((member) => (member.via ? `${member.name} (${member.via})` : member.name));
  if (others.length > 0)
    return `${shown} is writable by group ${group.name} ${how}, whose members include ${others.join(', ')}; ${consequence} (fix: ${groupFix})`;
  if (group.passwordIn !== undefined) {
    return `${shown} is writable by group ${group.name} ${how}, which has a password in ${group.passwordIn}, so whoever knows it can join with newgrp; ${consequence} (fix: ${groupFix}, or gpasswd -r ${group.name})`;
  }
  const outOfReach = membersOutOfReach(accounts);
  if (outOfReach !== undefined) {
    return `${shown} is writable by group ${group.name} ${how}, and ${outOfReach}, so members besides the server's user cannot be ruled out; ${consequence} (fix: ${groupFix})`;
  }
  return undefined;
}

/** The writers of directoryWritersProblem, one clause each; `inherited`: judging a folder's default ACL, as what is created inside will have it. */
function writers(stat: DirectoryStatus, shown: string, serverUid: number, options: WriterCheckOptions, inherited: boolean): string[] {
  const { acl = { kind: 'none' }, level = 'holding', accounts, platform = process.platform } = options;
  const consequence = inherited ? 'what is created in it inherits the entry, so another user could write that' : CONSEQUENCES[level];
  const recursive = level === 'folder' ? ' -R' : '';
  // Each fix names a command that removes this writer; a default ACL entry is removed with -d, every default ACL with -k.
  const fix = {
    group: inherited ? `setfacl -R -k ${shown}` : `chmod${recursive} g-w ${shown}`,
    other: inherited ? `setfacl -R -k ${shown}` : `chmod${recursive} o-w ${shown}`,
    aclUser: (user: string) => `setfacl${recursive}${inherited ? ' -d' : ''} -x u:${user} ${shown}`,
    aclGroup: (group: string) => `setfacl${recursive}${inherited ? ' -d' : ''} -x g:${group} ${shown}`,
    allAcls: `${removeAclCommand(platform).replace(' ', `${recursive} `)} ${shown}`,
  };
  const entryWord = inherited ? 'default ACL entry' : 'ACL entry';
  const trusted = (uid: number | undefined) => uid === serverUid || uid === ROOT_UID;
  if (!inherited && !trusted(stat.uid)) {
    const owner = userNameOf(stat.uid, accounts);
    const serverName = userNameOf(serverUid, accounts) ?? String(serverUid);
    const elsewhere = level === 'holding' ? ', or move the project' : '';
    return [
      `${shown} is owned by uid ${stat.uid}${owner ? ` (${owner})` : ''}, not by the server's user or root; ${consequence} (fix: chown${recursive} ${serverName} ${shown}${elsewhere})`,
    ];
  }
  if (acl.kind === 'distrusted') {
    const elsewhere = level === 'holding' ? ', or move the project' : '';
    return [`${shown} cannot be proved safe: ${acl.why}; ${consequence} (fix: ${fix.allAcls}${elsewhere})`];
  }
  // Write access under the sticky bit lets others add entries beside the project, never rename it away; below the root, adding is the attack.
  if (level === 'holding' && (stat.mode & STICKY) !== 0) return [];
  const mode = inherited ? 'its default ACL' : `mode ${fileModeText(stat.mode)}`;
  const problems: string[] = [];
  if ((stat.mode & OTHER_WRITE) !== 0) {
    const sticky = level === 'holding' ? ' without the sticky bit' : '';
    problems.push(`${shown} is writable by every user (${mode})${sticky}; ${consequence} (fix: ${fix.other})`);
    if (level === 'holding') return problems;
  }

  const groupProblem = (gid: number, how: string, groupFix: string): string | undefined =>
    groupWriterProblem({ shown, consequence, serverUid, options: { ...options, platform } }, gid, how, groupFix);

  const entries: PosixAclEntry[] = acl.kind === 'posix' ? acl.entries : [];
  // With an ACL the group bits of the mode are its mask; each entry but the owner's and other's writes only as far as the mask allows.
  const mask = entries.find((e) => e.tag === ACL_TAG.MASK)?.perm ?? ACL_PERM.READ | ACL_PERM.WRITE | ACL_PERM.EXECUTE;
  const writes = (e: PosixAclEntry) => (e.perm & mask & ACL_PERM.WRITE) !== 0;
  const maskText = entries.some((e) => e.tag === ACL_TAG.MASK) ? `, mask ${permText(mask)}` : '';
  const groupObject = entries.find((e) => e.tag === ACL_TAG.GROUP_OBJ);
  if (groupObject !== undefined) {
    if (writes(groupObject)) {
      const problem = groupProblem(stat.gid, `(${mode}, ${entryWord} group::${permText(groupObject.perm)}${maskText})`, fix.group);
      if (problem !== undefined) problems.push(problem);
    }
  } else if ((stat.mode & GROUP_WRITE) !== 0) {
    const problem = groupProblem(stat.gid, `(${mode})`, fix.group);
    if (problem !== undefined) problems.push(problem);
  }
  for (const entry of entries) {
    if (!writes(entry)) continue;
    if (entry.tag === ACL_TAG.USER && !trusted(entry.id)) {
      const name = userNameOf(entry.id, accounts);
      const shownUser = name ?? String(entry.id);
      problems.push(
        `${shown} is writable by user ${name ? `${name} (uid ${entry.id})` : `uid ${entry.id}`} through its ${entryWord} user:${shownUser}:${permText(entry.perm)}${maskText}; ${consequence} (fix: ${fix.aclUser(shownUser)})`,
      );
    } else if (entry.tag === ACL_TAG.GROUP) {
      const shownGroup = localGroup(entry.id, accounts)?.name ?? String(entry.id);
      const problem = groupProblem(entry.id, `through its ${entryWord} group:${shownGroup}:${permText(entry.perm)}${maskText}`, fix.aclGroup(shownGroup));
      if (problem !== undefined) problems.push(problem);
    }
  }
  if (acl.kind === 'nfs4') {
    // Deny entries take nothing away here (an allow entry before them may still grant). Inherit-only
    // entries apply to what is created inside, not to this directory: they count for a folder below the root.
    const inheritable = NFS4_ACE_FLAG.FILE_INHERIT | NFS4_ACE_FLAG.DIRECTORY_INHERIT;
    for (const ace of acl.aces) {
      if (ace.type !== NFS4_ACE_TYPE.ALLOW || (ace.mask & NFS4_WRITE_MASK) === 0) continue;
      const inheritOnly = (ace.flag & NFS4_ACE_FLAG.INHERIT_ONLY) !== 0;
      if (inheritOnly && (level !== 'folder' || (ace.flag & inheritable) === 0)) continue;
      const kindOfEntry = inheritOnly ? 'inherit-only NFSv4 ACL entry (for what is created in it)' : 'NFSv4 ACL entry';
      const how = `through its ${kindOfEntry} allowing ${ace.who} access mask 0x${ace.mask.toString(16)}`;
      // FreeBSD's setfacl -b leaves the trivial entries the mode bits make; Linux NFS clients edit an NFSv4 ACL with nfs4_setfacl.
      const nfs4Fix =
        platform === 'freebsd'
          ? `setfacl${recursive} -b ${shown}, or remove the entry with setfacl -x (getfacl ${shown} lists it)`
          : `remove the entry with nfs4_setfacl${recursive} -x (nfs4_getfacl ${shown} lists it)`;
      if (ace.who === 'OWNER@') continue;
      if (ace.uid !== undefined) {
        // FreeBSD: a user entry names the uid the kernel checks.
        if (trusted(ace.uid)) continue;
        const name = userNameOf(ace.uid, accounts);
        problems.push(`${shown} is writable by user ${name ? `${name} (uid ${ace.uid})` : `uid ${ace.uid}`} ${how}; ${consequence} (fix: ${nfs4Fix})`);
      } else if (ace.gid !== undefined) {
        const problem = groupProblem(ace.gid, how, nfs4Fix);
        if (problem !== undefined) problems.push(problem);
      } else if (ace.who === 'GROUP@') {
        if (!inheritOnly && (stat.mode & GROUP_WRITE) !== 0) continue; // judged above from the mode bits
        const problem = groupProblem(stat.gid, how, nfs4Fix);
        if (problem !== undefined) problems.push(problem);
      } else if (ace.who === 'EVERYONE@') {
        problems.push(`${shown} is writable by every user ${how}; ${consequence} (fix: ${nfs4Fix})`);
      } else {
        const kind = (ace.flag & NFS4_ACE_FLAG.IDENTIFIER_GROUP) !== 0 ? 'group' : 'principal';
        problems.push(`${shown} is writable by ${kind} ${ace.who} ${how}, which this server cannot map to local users; ${consequence} (fix: ${nfs4Fix})`);
      }
    }
  }
  return problems;
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

/**
 * Why users other than the server's and root could change the open folder or
 * file `fd` that the server trusts below the project root (policies/ and its
 * files, agents/ and its files, AGENTS.md, .symbiont/ and what it keeps),
 * shown as `shown` (an absolute path, so that the fix works from anywhere):
 * the rule of the project root, read by descriptor, without the sticky bit's
 * leniency, with a folder's inheritable ACL entries counted. Undefined when
 * nobody else can (or no uids, off POSIX).
 */
export function trustedWritersProblem(fd: number, shown: string, stat: fs.Stats = fs.fstatSync(fd), accounts?: AccountFiles): string | undefined {
  const serverUid = process.getuid?.();
  if (serverUid === undefined) return undefined;
  const level: WriterCheckLevel = stat.isDirectory() ? 'folder' : 'file';
  const noReader = aclReaderProblem();
  if (noReader !== undefined) {
    return `${shown} cannot be checked for other writers: ${noReader}; ${CONSEQUENCES[level]} (fix: start the server without any library preloaded into it that replaces these C calls (LD_PRELOAD, /etc/ld.so.preload); if there is none, report this line with the system's name and version)`;
  }
  const acl = readDescriptorAcl(fd, level === 'folder');
  return directoryWritersProblem(stat, shown, serverUid, { acl, level, accounts });
}

/** A trusted file that another user could write, refused while it was being read (refuseOtherWriters). */
export class OtherWritersError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OtherWritersError';
  }
}

/**
 * A look at a file opened for reading (PinnedDirectory.readTextFile, readTextFileAt)
 * that throws OtherWritersError when `rule` or trustedWritersProblem finds a
 * problem: the bytes read are those of the file judged, through the same descriptor.
 */
export function refuseOtherWriters(shown: string, rule?: (stat: fs.Stats) => string | undefined): (fd: number, stat: fs.Stats) => void {
  return (fd, stat) => {
    const problem = rule?.(stat) ?? trustedWritersProblem(fd, shown, stat);
    if (problem !== undefined) throw new OtherWritersError(problem);
  };
}

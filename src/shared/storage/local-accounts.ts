import fs from 'node:fs';
import path from 'node:path';

// Who can act through a group: every name the /etc/group lines with its gid
// list (`groupadd -o` makes several lines share one gid, and the kernel only
// sees the number, so each line's members are members), plus every user whose
// primary group it is in /etc/passwd, plus the members and administrators
// /etc/gshadow gives those groups' names (newgrp and sg take members from
// there, and an administrator can add any with gpasswd). Gids are numbers, as
// glibc reads them: strtoul in base 10 (bminor/glibc nss/fgetgrent_r.c at
// b121fdc552f3, nss/nss_files/files-parse.c at cc4d6614b592), so a line
// spelling 01004 is gid 1004.
// Node.js has no getgrgid, and NSS could not list a group's members completely
// anyway (getgrgid stops at the first source that knows the gid; a directory
// service adds members per user), so only the local files are read, and
// membersOutOfReach says when the system takes users or groups from elsewhere
// too: a caller then cannot rule out other members. /etc/gshadow is readable
// by root only on most systems; when it exists but cannot be read,
// unreadAccountFiles says so for `symbi check`.

/** One user who belongs to a group; `uid` is undefined when /etc/passwd does not list the name. */
export interface GroupMember {
  name: string;
  uid: number | undefined;
  /** How the membership comes about when it is easy to miss (a later /etc/group line with the same gid), for messages. */
  via?: string;
}

/** A group as the local account files describe it. */
export interface LocalGroup {
  name: string;
  members: GroupMember[];
  /** The shadow group file that gives the group a password anyone who knows it can join with (newgrp), if any. */
  passwordIn?: string;
}

/** Where the account files live; tests and the defaults only. */
export interface AccountFiles {
  passwd: string;
  group: string;
  nsswitch: string;
  /** The shadow group file; none is read when absent (tests that do not need one). */
  gshadow?: string;
}

const SYSTEM_ACCOUNT_FILES: AccountFiles = { passwd: '/etc/passwd', group: '/etc/group', nsswitch: '/etc/nsswitch.conf', gshadow: '/etc/gshadow' };

// nss-systemd(8): besides root and nobody, it serves records from static
// drop-ins in these directories and from the Varlink services in
// /run/systemd/userdb/. Dynamic users (DynamicUser=) get a group of their own,
// the multiplexer and the NSS bridge only relay, and the drop-in service reads
// the directories below; any other service (systemd-homed, machined) can add
// users and memberships this server does not read.
const USERDB_DROP_IN_DIRECTORIES = ['/etc/userdb', '/run/userdb', '/run/host/userdb', '/usr/lib/userdb'];
const USERDB_SERVICES_DIRECTORY = '/run/systemd/userdb';
const USERDB_RELAY_SERVICES = new Set(['io.systemd.DynamicUser', 'io.systemd.Multiplexer', 'io.systemd.NameServiceSwitch', 'io.systemd.DropIn']);

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

/** The lines last read of each file, by its identity then: the writer check judges a group once per file it checks (a thousand agent files in a umask 002 project). */
const linesRead = new Map<string, { identity: string; lines: string[] }>();

function readLines(file: string): string[] {
  try {
    const s = fs.statSync(file, { bigint: true });
    const identity = `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
    const known = linesRead.get(file);
    if (known?.identity === identity) return known.lines;
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    linesRead.set(file, { identity, lines });
    return lines;
  } catch {
    return [];
  }
}

/**
 * A uid or gid field as glibc's files backend reads it (INT_FIELD in base 10, strtou32):
 * strtoul's leading blanks and "+",
 * then decimal digits, leading zeros allowed, up to the colon; a value past 32 bits
 * becomes 0xffffffff, which is no real id. Undefined when glibc would skip the line.
 */
function idField(field: string | undefined): number | undefined {
  const digits = field === undefined ? null : /^[ \t\n\v\f\r]*\+?(\d+)$/.exec(field);
  if (digits === null) return undefined;
  const id = Number(digits[1]);
  return id <= 0xffffffff ? id : 0xffffffff;
}

function passwdEntries(file: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of readLines(file)) {
    const [name, , uidField, gidField] = line.split(':');
    const uid = idField(uidField);
    const gid = idField(gidField);
    if (!name || uid === undefined || gid === undefined) continue;
    entries.push({ name, uid, gid });
  }
  return entries;
}

/** An /etc/gshadow line: group name, password, administrators, members. */
interface GshadowEntry {
  name: string;
  password: string;
  admins: string[];
  members: string[];
}

function nameList(field: string | undefined): string[] {
  return (field ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '');
}

function gshadowEntries(file: string | undefined): GshadowEntry[] {
  if (file === undefined) return [];
  const entries: GshadowEntry[] = [];
  for (const line of readLines(file)) {
    const [name, password = '', admins, members] = line.split(':');
    if (!name || name.startsWith('+') || name.startsWith('-')) continue;
    entries.push({ name, password, admins: nameList(admins), members: nameList(members) });
  }
  return entries;
}

/**
 * A group password newgrp accepts from a user who knows it: not empty (an empty one
 * admits members only: check_perms in shadow-maint/shadow src/newgrp.c, commit
 * 38a50366bc80) and not locked ("!" or "*" never matches a crypt).
 */
function joinablePassword(password: string): boolean {
  return password !== '' && !password.startsWith('!') && !password.startsWith('*');
}

/** The members of group `gid` (listed on any of its lines, in /etc/gshadow, and primary), or undefined when /etc/group does not list the gid. */
export function localGroup(gid: number, files: AccountFiles = SYSTEM_ACCOUNT_FILES): LocalGroup | undefined {
  const lines = readLines(files.group)
    .map((line) => line.split(':'))
    .filter((fields) => idField(fields[2]) === gid);
  if (lines.length === 0) return undefined;
  const users = passwdEntries(files.passwd);
  const uidOf = (member: string) => users.find((u) => u.name === member)?.uid;
  const firstName = lines[0]![0] || String(gid);
  const members = new Map<string, GroupMember>();
  const add = (member: string, via: string | undefined) => {
    if (!members.has(member)) members.set(member, { name: member, uid: uidOf(member), ...(via === undefined ? {} : { via }) });
  };
  lines.forEach(([lineName = '', , , list = ''], index) => {
    const via = index === 0 ? undefined : `through a second /etc/group line for gid ${gid}, "${lineName}"`;
    for (const member of nameList(list)) add(member, via);
  });
  const names = new Set(lines.map(([lineName = '']) => lineName));
  let passwordOf: string | undefined;
  for (const entry of gshadowEntries(files.gshadow)) {
    if (!names.has(entry.name)) continue;
    for (const member of entry.members) add(member, `listed for "${entry.name}" in ${files.gshadow} only, so newgrp or sg lets them in`);
    for (const admin of entry.admins) add(admin, `an administrator of "${entry.name}" in ${files.gshadow}, who can add members with gpasswd`);
    if (joinablePassword(entry.password)) passwordOf ??= entry.name;
  }
  for (const user of users) if (user.gid === gid) add(user.name, undefined);
  return { name: firstName, members: [...members.values()], ...(passwordOf === undefined ? {} : { passwordIn: `${files.gshadow}` }) };
}

/**
 * The account files that exist but could not be read, each with the errno
 * (`/etc/gshadow (EACCES)`): members listed only there are not seen.
 */
export function unreadAccountFiles(files: AccountFiles = SYSTEM_ACCOUNT_FILES): string[] {
  const unread: string[] = [];
  for (const file of [files.passwd, files.group, files.gshadow]) {
    if (file === undefined) continue;
    try {
      fs.readFileSync(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (code !== 'ENOENT') unread.push(`${file} (${code})`);
    }
  }
  return unread;
}

/** The login name of `uid` in /etc/passwd, for messages; undefined when it is not listed. */
export function userNameOf(uid: number, files: AccountFiles = SYSTEM_ACCOUNT_FILES): string | undefined {
  return passwdEntries(files.passwd).find((u) => u.uid === uid)?.name;
}

/** The sources /etc/nsswitch.conf names for `database` ("files" when it has no such line, as glibc assumes). */
function nssSources(file: string, database: string): string[] {
  for (const raw of readLines(file)) {
    const line = raw.replace(/#.*/, '').trim();
    const colon = line.indexOf(':');
    if (colon < 0 || line.slice(0, colon).trim() !== database) continue;
    // "[NOTFOUND=return]" and the like are actions, not sources.
    return line
      .slice(colon + 1)
      .replace(/\[[^\]]*\]/g, ' ')
      .split(/\s+/)
      .filter((s) => s !== '');
  }
  return ['files'];
}

function entriesOf(directory: string): string[] {
  try {
    return fs.readdirSync(directory);
  } catch {
    return [];
  }
}

/** Why nss-systemd may add users or memberships here, or undefined when it adds none beyond dynamic users' own groups. */
function systemdRecords(): string | undefined {
  for (const directory of USERDB_DROP_IN_DIRECTORIES) {
    const records = entriesOf(directory);
    if (records.length > 0) return `nss-systemd reads user and group records from ${path.join(directory, records[0]!)}`;
  }
  const services = entriesOf(USERDB_SERVICES_DIRECTORY).filter((name) => !USERDB_RELAY_SERVICES.has(name));
  if (services.length > 0) return `nss-systemd takes users and groups from ${path.join(USERDB_SERVICES_DIRECTORY, services[0]!)}`;
  return undefined;
}

/**
 * Why group members may exist beyond what localGroup finds (a directory
 * service such as LDAP or sssd, NIS compat lines, systemd user records), or
 * undefined when the local files are the whole story.
 */
export function membersOutOfReach(files: AccountFiles = SYSTEM_ACCOUNT_FILES): string | undefined {
  const unread = new Set<string>();
  for (const database of ['passwd', 'group']) {
    for (const source of nssSources(files.nsswitch, database)) {
      if (source === 'files') continue;
      if (source === 'compat') {
        const file = database === 'passwd' ? files.passwd : files.group;
        if (readLines(file).some((line) => line.startsWith('+') || line.startsWith('-')))
          return `${file} has NIS compat lines (+/-), which this server does not resolve`;
        continue;
      }
      if (source === 'systemd') {
        const records = systemdRecords();
        if (records !== undefined) return `${files.nsswitch} names systemd and ${records}, which this server does not read`;
        continue;
      }
      unread.add(source);
    }
  }
  if (unread.size === 0) return undefined;
  return `${files.nsswitch} also takes users or groups from ${[...unread].join(', ')}, which this server does not query`;
}

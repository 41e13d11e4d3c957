import fs from 'node:fs';

// Who can act through a group: the names /etc/group lists for it, plus every
// user whose primary group it is in /etc/passwd. Only the local files are
// read (Node.js has no getgrgid): a group they do not list is reported as
// unknown, so a caller treats its members as unknown too.

/** One user who belongs to a group; `uid` is undefined when /etc/passwd does not list the name. */
export interface GroupMember {
  name: string;
  uid: number | undefined;
}

/** A group as the local account files describe it. */
export interface LocalGroup {
  name: string;
  members: GroupMember[];
}

/** Where the account files live; tests and the defaults only. */
export interface AccountFiles {
  passwd: string;
  group: string;
}

const SYSTEM_ACCOUNT_FILES: AccountFiles = { passwd: '/etc/passwd', group: '/etc/group' };

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
}

function readLines(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
}

function passwdEntries(file: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of readLines(file)) {
    const [name, , uid, gid] = line.split(':');
    if (!name || uid === undefined || gid === undefined || !/^\d+$/.test(uid) || !/^\d+$/.test(gid)) continue;
    entries.push({ name, uid: Number(uid), gid: Number(gid) });
  }
  return entries;
}

/** The members of group `gid` (listed and primary), or undefined when /etc/group does not list the group. */
export function localGroup(gid: number, files: AccountFiles = SYSTEM_ACCOUNT_FILES): LocalGroup | undefined {
  const line = readLines(files.group).find((l) => l.split(':')[2] === String(gid));
  if (line === undefined) return undefined;
  const [name, , , list = ''] = line.split(':');
  const users = passwdEntries(files.passwd);
  const uidOf = (member: string) => users.find((u) => u.name === member)?.uid;
  const names = new Set(list.split(',').map((m) => m.trim()).filter((m) => m !== ''));
  for (const user of users) if (user.gid === gid) names.add(user.name);
  return { name: name ?? String(gid), members: [...names].map((member) => ({ name: member, uid: uidOf(member) })) };
}

/** The login name of `uid` in /etc/passwd, for messages; undefined when it is not listed. */
export function userNameOf(uid: number, files: AccountFiles = SYSTEM_ACCOUNT_FILES): string | undefined {
  return passwdEntries(files.passwd).find((u) => u.uid === uid)?.name;
}

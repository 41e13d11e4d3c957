import { spawnSync } from 'node:child_process';

// macOS keeps users and groups in Open Directory, not in /etc/group (read in
// single-user mode only). A group-writable level is trusted only when the
// group is provably the server user's alone, from facts the local directory
// node gives (dscl(1), its -plist output):
//
// - the search policy is local only: `dscl /Search -read / CSPSearchPath`
//   lists /Local/Default and nothing else (a directory-bound Mac adds
//   "/Active Directory/..." or "/LDAPv3/...", whose groups, Domain Users among
//   them, have members the local node does not list);
// - the group is a record of the local node (`dscl . -readall /Groups`), and
//   not one of the built-in groups (GeneratedUID ABCDEFAB-CDEF-ABCD-EFAB-CDEF
//   followed by the gid in hex), among which are those whose members macOS
//   computes rather than lists (everyone, localaccounts, authedusers);
// - its GroupMembership (names) and GroupMembers (GUIDs) name nobody but the
//   server's user and root, and it has no NestedGroups;
// - no other local user has it as PrimaryGroupID;
// - it is not staff (gid 20), the primary group macOS gives every new local
//   user.
// There is no call that lists a group's members (mbr_check_membership answers
// for one user at a time), which is why the records themselves are read. The
// decision (macGroupProblem) is a pure function of these facts; gathering them
// (macAccounts) runs dscl.

/** staff, the primary group macOS gives every local user (dscl . -read /Users/NAME PrimaryGroupID). */
export const MACOS_STAFF_GID = 20;
/** The only directory node a local-only search policy lists. */
export const MACOS_LOCAL_NODE = '/Local/Default';
/** The GeneratedUID prefix of macOS's built-in groups whose membership is computed (everyone: ...CDEF0000000C). */
const COMPUTED_GROUP_GUID = /^ABCDEFAB-CDEF-ABCD-EFAB-CDEF/i;
/** root's GeneratedUID on every macOS system. */
const ROOT_GUID = 'FFFFEEEE-DDDD-CCCC-BBBB-AAAA00000000';
const DSCL = '/usr/bin/dscl';
/** How long one reading of the local directory serves (a check judging a thousand group-writable files reads it once). */
const REREAD_AFTER_MS = 2000;
const DSCL_TIMEOUT_MS = 10_000;

export interface MacUser {
  /** RecordName: the short name first, then its aliases (GroupMembership may name either). */
  names: string[];
  uid: number;
  /** PrimaryGroupID. */
  gid: number;
  guid?: string;
}

export interface MacGroup {
  name: string;
  gid: number;
  guid?: string;
  /** GroupMembership: short names. */
  members: string[];
  /** GroupMembers: GeneratedUIDs. */
  memberGuids: string[];
  /** NestedGroups: GeneratedUIDs of groups whose members are members. */
  nested: string[];
}

/** What the local directory node and the search policy say, or why they could not be read. */
export type MacAccounts = { searchPath: string[]; users: MacUser[]; groups: MacGroup[] } | { problem: string };

/** How a user checks the same facts by hand (docs/project-directories.md repeats these). */
const HOW_TO_CHECK = 'see dscl /Search -read / CSPSearchPath and dscl . -read /Groups/NAME';

/**
 * Why group `gid` cannot be proved to be the server user's alone (a clause
 * that follows "writable by group NAME (...)"), or undefined when it is: a
 * local record with no member, nested group or primary user besides the
 * server's user and root, under a local-only search policy, and not staff.
 */
export function macGroupProblem(gid: number, serverUid: number, accounts: MacAccounts): string | undefined {
  // staff first: it is refused whatever the directory says, or whether it could be read.
  if (gid === MACOS_STAFF_GID) return 'the primary group macOS gives every local user';
  if ('problem' in accounts) return `whose members cannot be read: ${accounts.problem}; so members besides the server's user cannot be ruled out`;
  const elsewhere = accounts.searchPath.filter((node) => node !== MACOS_LOCAL_NODE);
  if (elsewhere.length > 0 || !accounts.searchPath.includes(MACOS_LOCAL_NODE)) {
    const nodes = elsewhere.length > 0 ? elsewhere.join(', ') : 'no local node';
    return `and the directory search policy (CSPSearchPath) lists ${nodes} besides ${MACOS_LOCAL_NODE}, whose groups and members the local node does not hold, so members besides the server's user cannot be ruled out (${HOW_TO_CHECK})`;
  }
  const records = accounts.groups.filter((group) => group.gid === gid);
  if (records.length === 0) return `which the local directory (${MACOS_LOCAL_NODE}) does not hold, so its members cannot be checked`;
  const server = accounts.users.find((user) => user.uid === serverUid);
  const trustedNames = new Set(['root', ...(server?.names ?? [])]);
  const trustedGuids = new Set([ROOT_GUID, ...(server?.guid ? [server.guid.toUpperCase()] : [])]);
  for (const group of records) {
    if (group.guid !== undefined && COMPUTED_GROUP_GUID.test(group.guid)) {
      return `a built-in macOS group (GeneratedUID ${group.guid}), the kind whose members macOS may compute (everyone, localaccounts, authedusers), so members besides the server's user cannot be ruled out`;
    }
  }
  const others = new Set<string>();
  for (const group of records) {
    for (const member of group.members) if (!trustedNames.has(member)) others.add(`${member} (GroupMembership of ${group.name})`);
    for (const guid of group.memberGuids) if (!trustedGuids.has(guid.toUpperCase())) others.add(`${guid} (GroupMembers of ${group.name})`);
  }
  for (const user of accounts.users) {
    if (user.gid === gid && user.uid !== serverUid && user.uid !== 0) others.add(`${user.names[0] ?? `uid ${user.uid}`} (whose PrimaryGroupID it is)`);
  }
  if (others.size > 0) return `whose members include ${[...others].join(', ')} (${HOW_TO_CHECK})`;
  const nested = records.flatMap((group) => group.nested.map((guid) => `${guid} (NestedGroups of ${group.name})`));
  if (nested.length > 0) return `which nests other groups, ${nested.join(', ')}, whose members are its members (${HOW_TO_CHECK})`;
  return undefined;
}

/** The local name of group `gid` for messages, where the local node holds it. */
export function macGroupName(gid: number, accounts: MacAccounts): string | undefined {
  const local = 'problem' in accounts ? undefined : accounts.groups.find((group) => group.gid === gid)?.name;
  return local ?? (gid === MACOS_STAFF_GID ? 'staff' : undefined);
}

// --- reading dscl's -plist output -------------------------------------------

/** A property list value as dscl prints it: dictionaries, arrays and strings (numbers are strings in directory records). */
export type PlistValue = string | PlistValue[] | { [key: string]: PlistValue };

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, entity: string) => {
    if (entity.startsWith('#x') || entity.startsWith('#X')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(parseInt(entity.slice(1), 10));
    return XML_ENTITIES[entity.toLowerCase()] ?? '';
  });
}

/** Parses an XML property list (the subset dscl -plist writes); throws an Error saying where it is malformed. */
export function parsePlist(text: string): PlistValue {
  const tokens = [
    ...text.matchAll(/<(\/?)(dict|array|key|string|integer|real|true|false|data|date)(\s*\/)?>|<\?[^>]*\?>|<!DOCTYPE[^>]*>|<\/?plist[^>]*>|([^<]+)/g),
  ];
  let at = 0;
  const next = () => tokens[at++];
  const skipBlank = () => {
    while (at < tokens.length) {
      const token = tokens[at]!;
      if (token[2] !== undefined) return;
      if (token[4] !== undefined && token[4].trim() !== '') throw new Error(`text outside an element: ${token[4].trim().slice(0, 40)}`);
      at++;
    }
  };
  const textUntil = (element: string): string => {
    let text = '';
    for (;;) {
      const token = next();
      if (token === undefined) throw new Error(`<${element}> is not closed`);
      if (token[4] !== undefined) text += token[4];
      else if (token[1] === '/' && token[2] === element) return unescapeXml(text);
      else throw new Error(`<${element}> holds an element`);
    }
  };
  const value = (): PlistValue => {
    skipBlank();
    const token = next();
    if (token === undefined || token[2] === undefined || token[1] === '/') throw new Error('a value was expected');
    const element = token[2];
    const empty = token[3] !== undefined;
    switch (element) {
      case 'dict': {
        const dict: { [key: string]: PlistValue } = {};
        if (empty) return dict;
        for (;;) {
          skipBlank();
          const inner = next();
          if (inner?.[1] === '/' && inner[2] === 'dict') return dict;
          if (inner?.[2] !== 'key' || inner[1] === '/') throw new Error('a <dict> holds something other than <key> and a value');
          const key = textUntil('key');
          dict[key] = value();
        }
      }
      case 'array': {
        const array: PlistValue[] = [];
        if (empty) return array;
        for (;;) {
          skipBlank();
          const inner = tokens[at];
          if (inner?.[1] === '/' && inner[2] === 'array') {
            at++;
            return array;
          }
          array.push(value());
        }
      }
      case 'true':
      case 'false':
        return element;
      default:
        return empty ? '' : textUntil(element);
    }
  };
  const result = value();
  skipBlank();
  if (at < tokens.length) throw new Error('more than one value');
  return result;
}

/** One attribute of a directory record: its values, whether dscl named it with or without the dsAttrTypeStandard: prefix. */
function attribute(record: PlistValue, name: string): string[] {
  if (typeof record !== 'object' || Array.isArray(record)) return [];
  const values = record[`dsAttrTypeStandard:${name}`] ?? record[name];
  if (values === undefined) return [];
  return (Array.isArray(values) ? values : [values]).filter((v): v is string => typeof v === 'string');
}

/** The records of `dscl -plist . -readall ...`: an array of dictionaries (one record alone may come as a dictionary). */
function records(value: PlistValue): PlistValue[] {
  return Array.isArray(value) ? value : [value];
}

const idOf = (values: string[]): number | undefined => (values.length > 0 && /^-?\d+$/.test(values[0]!) ? Number(values[0]) : undefined);

/** The local node's users and groups and the search path, from dscl's -plist outputs (what macAccounts runs). */
export function macAccountsFrom(searchPolicy: string, users: string, groups: string): MacAccounts {
  let parsed: [PlistValue, PlistValue, PlistValue];
  try {
    parsed = [parsePlist(searchPolicy), parsePlist(users), parsePlist(groups)];
  } catch (err) {
    return { problem: `dscl's answer cannot be read (${(err as Error).message})` };
  }
  const [policy, userRecords, groupRecords] = parsed;
  const searchPath = attribute(policy, 'CSPSearchPath');
  if (searchPath.length === 0) return { problem: 'dscl /Search -read / CSPSearchPath gave no search path' };
  const macUsers: MacUser[] = [];
  for (const record of records(userRecords)) {
    const names = attribute(record, 'RecordName');
    const uid = idOf(attribute(record, 'UniqueID'));
    const gid = idOf(attribute(record, 'PrimaryGroupID'));
    const [guid] = attribute(record, 'GeneratedUID');
    if (names.length === 0 || uid === undefined || gid === undefined) continue;
    macUsers.push({ names, uid, gid, ...(guid === undefined ? {} : { guid }) });
  }
  const macGroups: MacGroup[] = [];
  for (const record of records(groupRecords)) {
    const [name] = attribute(record, 'RecordName');
    const gid = idOf(attribute(record, 'PrimaryGroupID'));
    const [guid] = attribute(record, 'GeneratedUID');
    if (name === undefined || gid === undefined) continue;
    macGroups.push({
      name,
      gid,
      ...(guid === undefined ? {} : { guid }),
      members: attribute(record, 'GroupMembership'),
      memberGuids: attribute(record, 'GroupMembers'),
      nested: attribute(record, 'NestedGroups'),
    });
  }
  return { searchPath, users: macUsers, groups: macGroups };
}

let lastRead: { at: number; accounts: MacAccounts } | undefined;

/** Runs dscl with `args`; its standard output, or why it gave none. */
function dscl(args: string[]): { out: string } | { problem: string } {
  const run = spawnSync(DSCL, ['-plist', ...args], { encoding: 'utf8', timeout: DSCL_TIMEOUT_MS, env: { PATH: '/usr/bin:/bin' } });
  const command = `dscl ${args.join(' ')}`;
  if (run.error !== undefined) return { problem: `${command} could not run (${(run.error as NodeJS.ErrnoException).code ?? run.error.message})` };
  if (run.status !== 0) return { problem: `${command} ended with status ${run.status}: ${run.stderr.trim().split('\n')[0] ?? ''}` };
  return { out: run.stdout };
}

/** The local directory's users and groups and the search policy, read with dscl (at most every REREAD_AFTER_MS). */
export function macAccounts(): MacAccounts {
  const now = Date.now();
  if (lastRead !== undefined && now - lastRead.at < REREAD_AFTER_MS) return lastRead.accounts;
  const policy = dscl(['/Search', '-read', '/', 'CSPSearchPath']);
  const users = dscl(['.', '-readall', '/Users', 'RecordName', 'UniqueID', 'PrimaryGroupID', 'GeneratedUID']);
  const groups = dscl(['.', '-readall', '/Groups', 'RecordName', 'PrimaryGroupID', 'GeneratedUID', 'GroupMembership', 'GroupMembers', 'NestedGroups']);
  const failed = [policy, users, groups].find((answer): answer is { problem: string } => 'problem' in answer);
  const accounts =
    failed !== undefined
      ? { problem: failed.problem }
      : macAccountsFrom((policy as { out: string }).out, (users as { out: string }).out, (groups as { out: string }).out);
  lastRead = { at: now, accounts };
  return accounts;
}

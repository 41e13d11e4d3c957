import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { directoryWritersProblem } from '../../src/shared/storage/directory-ownership.js';
import { macAccountsFrom, macGroupProblem, parsePlist, type MacAccounts, type MacGroup, type MacUser } from '../../src/shared/storage/macos-groups.js';

// macOS keeps group members in Open Directory. A group-writable level is
// trusted only when the local directory's records prove the group the server
// user's alone (macos-groups.ts); each rule is tried here on gathered facts,
// the way `dscl -plist` gives them. The gathering itself (dscl) runs on a Mac
// only: test/process/macos-acls.test.ts.

const ME = 501;
const MY_GUID = '2E6C1A3B-0C4D-4E5F-8A9B-0123456789AB';
const ME_USER = { names: ['ann'], uid: ME, gid: 4242, guid: MY_GUID };
const BOB_USER = { names: ['bob'], uid: 502, gid: 20, guid: '5F1C2D3E-4A5B-4C6D-8E7F-9A0B1C2D3E4F' };
const ROOT_USER = { names: ['root'], uid: 0, gid: 0, guid: 'FFFFEEEE-DDDD-CCCC-BBBB-AAAA00000000' };
const annGroup = (change: Partial<MacGroup> = {}): MacGroup => ({
  name: 'ann',
  gid: 4242,
  guid: 'A1B2C3D4-0000-4000-8000-000000001092',
  members: [],
  memberGuids: [],
  nested: [],
  ...change,
});
const STAFF: MacGroup = { name: 'staff', gid: 20, guid: 'ABCDEFAB-CDEF-ABCD-EFAB-CDEF00000014', members: ['root'], memberGuids: [], nested: [] };

/** A local-only Mac with ann (the server's user), bob and root, and `groups`. */
function mac(groups: MacGroup[], change: Partial<{ searchPath: string[]; users: MacUser[] }> = {}): MacAccounts {
  return { searchPath: ['/Local/Default'], users: [ME_USER, BOB_USER, ROOT_USER], groups: [STAFF, ...groups], ...change };
}

describe('macOS: a group is trusted only when its local records prove it the user’s alone', () => {
  it("the user's own group, a local record with no other member, nested group or primary user, under a local-only search policy, passes", () => {
    assert.equal(macGroupProblem(4242, ME, mac([annGroup()])), undefined);
    // The user and root listed by name or GUID are no other members.
    assert.equal(macGroupProblem(4242, ME, mac([annGroup({ members: ['ann', 'root'], memberGuids: [MY_GUID.toLowerCase(), ROOT_USER.guid] })])), undefined);
  });

  it('staff is refused, whatever its records list, and when the directory cannot be read', () => {
    assert.match(macGroupProblem(20, ME, mac([])) ?? '', /^the primary group macOS gives every local user$/);
    assert.match(macGroupProblem(20, ME, { problem: 'dscl could not run' }) ?? '', /^the primary group macOS gives every local user$/);
  });

  it('a search policy that reaches beyond the local node is refused, naming the node', () => {
    const bound = mac([annGroup()], { searchPath: ['/Local/Default', '/Active Directory/CORP/All Domains'] });
    assert.match(
      macGroupProblem(4242, ME, bound) ?? '',
      /search policy \(CSPSearchPath\) lists \/Active Directory\/CORP\/All Domains besides \/Local\/Default/,
    );
    assert.match(
      macGroupProblem(4242, ME, mac([annGroup()], { searchPath: ['/LDAPv3/ldap.example.com'] })) ?? '',
      /lists \/LDAPv3\/ldap\.example\.com besides/,
    );
  });

  it('a group the local node does not hold is refused (a directory-only group such as Domain Users)', () => {
    assert.match(macGroupProblem(1_896_000_513, ME, mac([annGroup()])) ?? '', /which the local directory \(\/Local\/Default\) does not hold/);
  });

  it('a built-in group whose members macOS computes (everyone, localaccounts) is refused', () => {
    const everyone = { name: 'everyone', gid: 12, guid: 'ABCDEFAB-CDEF-ABCD-EFAB-CDEF0000000C', members: [], memberGuids: [], nested: [] };
    assert.match(
      macGroupProblem(12, ME, mac([everyone])) ?? '',
      /a built-in macOS group \(GeneratedUID ABCDEFAB-CDEF-ABCD-EFAB-CDEF0000000C\), the kind whose members macOS may compute/,
    );
  });

  it('another member by name or by GUID is refused, naming it', () => {
    assert.match(macGroupProblem(4242, ME, mac([annGroup({ members: ['ann', 'bob'] })])) ?? '', /whose members include bob \(GroupMembership of ann\)/);
    assert.match(
      macGroupProblem(4242, ME, mac([annGroup({ memberGuids: [BOB_USER.guid] })])) ?? '',
      /whose members include 5F1C2D3E-.* \(GroupMembers of ann\)/,
    );
  });

  it("another local user whose primary group it is, is refused, though the group's record lists nobody", () => {
    const carol = { names: ['carol'], uid: 503, gid: 4242 };
    assert.match(
      macGroupProblem(4242, ME, mac([annGroup()], { users: [ME_USER, carol, ROOT_USER] })) ?? '',
      /whose members include carol \(whose PrimaryGroupID it is\)/,
    );
  });

  it('a group with nested groups is refused', () => {
    assert.match(
      macGroupProblem(4242, ME, mac([annGroup({ nested: ['C0FFEE00-0000-4000-8000-000000000001'] })])) ?? '',
      /which nests other groups, C0FFEE00-.* \(NestedGroups of ann\)/,
    );
  });

  it('every local record with the gid counts, not only the first', () => {
    const twin = annGroup({ name: 'ann-twin', members: ['bob'] });
    assert.match(macGroupProblem(4242, ME, mac([annGroup(), twin])) ?? '', /bob \(GroupMembership of ann-twin\)/);
  });

  it('a directory that could not be read is refused with why', () => {
    assert.match(
      macGroupProblem(4242, ME, { problem: 'dscl . -readall /Groups could not run (ENOENT)' }) ?? '',
      /whose members cannot be read: dscl .* \(ENOENT\)/,
    );
  });
});

describe('macOS: the writer check refuses a group-writable level unless the group is proved alone, with the fix', () => {
  const judge = (gid: number, macAccounts: MacAccounts, level: 'holding' | 'folder' | 'file' = 'holding') =>
    directoryWritersProblem({ uid: ME, gid, mode: level === 'file' ? 0o100664 : 0o40775 }, '/Users/ann/project', ME, {
      platform: 'darwin',
      macAccounts,
      level,
    });

  it('a staff 0775 root is refused with chmod g-w, a folder below with chmod -R g-w', () => {
    assert.match(
      judge(20, mac([])) ?? '',
      /^\/Users\/ann\/project is writable by group staff \(mode 0775\), the primary group macOS gives every local user; .*\(fix: chmod g-w \/Users\/ann\/project\)$/,
    );
    assert.match(judge(20, mac([]), 'folder') ?? '', /\(fix: chmod -R g-w \/Users\/ann\/project\)$/);
    assert.match(judge(20, mac([]), 'file') ?? '', /\(fix: chmod g-w \/Users\/ann\/project\)$/);
  });

  it("the user's own group passes when proved alone, and is refused on a directory-bound Mac", () => {
    assert.equal(judge(4242, mac([annGroup()])), undefined);
    const bound = mac([annGroup()], { searchPath: ['/Local/Default', '/Active Directory/CORP/All Domains'] });
    assert.match(judge(4242, bound) ?? '', /writable by group ann \(mode 0775\), and the directory search policy .*\(fix: chmod g-w \/Users\/ann\/project\)$/);
  });

  it('a level no group can write never asks the directory', () => {
    assert.equal(
      directoryWritersProblem({ uid: ME, gid: 20, mode: 0o40755 }, '/p', ME, { platform: 'darwin', macAccounts: { problem: 'never read' } }),
      undefined,
    );
  });
});

describe("dscl's -plist answers", () => {
  // The shapes dscl -plist gives (recorded from its documented form): -readall an array of
  // dictionaries keyed dsAttrTypeStandard:NAME, each value an array of strings; -read one dictionary.
  const POLICY = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>dsAttrTypeStandard:CSPSearchPath</key>
	<array>
		<string>/Local/Default</string>
	</array>
</dict>
</plist>
`;
  const USERS = `<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<array>
	<dict>
		<key>dsAttrTypeStandard:GeneratedUID</key>
		<array><string>${MY_GUID}</string></array>
		<key>dsAttrTypeStandard:PrimaryGroupID</key>
		<array><string>20</string></array>
		<key>dsAttrTypeStandard:RecordName</key>
		<array><string>ann</string><string>com.apple.idms.appleid.ann&amp;co</string></array>
		<key>dsAttrTypeStandard:UniqueID</key>
		<array><string>501</string></array>
	</dict>
	<dict>
		<key>dsAttrTypeStandard:PrimaryGroupID</key>
		<array><string>-2</string></array>
		<key>dsAttrTypeStandard:RecordName</key>
		<array><string>nobody</string></array>
		<key>dsAttrTypeStandard:UniqueID</key>
		<array><string>-2</string></array>
	</dict>
</array>
</plist>
`;
  const GROUPS = `<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<array>
	<dict>
		<key>dsAttrTypeStandard:GroupMembership</key>
		<array><string>root</string><string>ann</string></array>
		<key>dsAttrTypeStandard:NestedGroups</key>
		<array/>
		<key>dsAttrTypeStandard:PrimaryGroupID</key>
		<array><string>80</string></array>
		<key>dsAttrTypeStandard:RecordName</key>
		<array><string>admin</string></array>
	</dict>
</array>
</plist>
`;

  it('reads the search path, users (with aliases) and groups', () => {
    assert.deepEqual(macAccountsFrom(POLICY, USERS, GROUPS), {
      searchPath: ['/Local/Default'],
      users: [
        { names: ['ann', 'com.apple.idms.appleid.ann&co'], uid: 501, gid: 20, guid: MY_GUID },
        { names: ['nobody'], uid: -2, gid: -2 },
      ],
      groups: [{ name: 'admin', gid: 80, members: ['root', 'ann'], memberGuids: [], nested: [] }],
    });
  });

  it('says what is wrong with an answer it cannot read, rather than read it as empty', () => {
    assert.deepEqual(macAccountsFrom('<plist><dict><key>x</key>', USERS, GROUPS), { problem: "dscl's answer cannot be read (a value was expected)" });
    assert.deepEqual(macAccountsFrom('<plist><dict></dict></plist>', USERS, GROUPS), { problem: 'dscl /Search -read / CSPSearchPath gave no search path' });
    assert.throws(() => parsePlist('<array><string>a</string></array><array/>'), /more than one value/);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { proofKey } from '../../src/shared/confinement/proof-cache.js';
import { directoryWritersProblem } from '../../src/shared/storage/directory-ownership.js';
import {
  aclProofCode,
  DARWIN_PROOF_ENTRIES,
  type DirectoryAcl,
  FREEBSD_NFS4_PERMS,
  FREEBSD_PROOF_ENTRIES,
  holdsNfs4Entries,
  NFS4_ACE_FLAG,
  NFS4_ACE_TYPE,
  NFS4_WRITE_MASK,
  type Nfs4Ace,
  sameDarwinEntries,
} from '../../src/shared/storage/directory-acl.js';

// The pure parts of the macOS and FreeBSD ACL readers and of their proof,
// which run here although the C calls they stand beside run only on those
// systems: the comparisons the proof's controls make (a reader with a wrong
// constant must fail them), FreeBSD's permission bits as RFC 7530 access
// bits, and how the writer check judges the entries the FreeBSD reader gives.

describe("the ACL proof's comparisons catch a reader that reads entries wrong", () => {
  const granting = DARWIN_PROOF_ENTRIES.granting.map((e) => e.ace);

  it('macOS: the entries set, in any order, pass; a wrong tag, permission or flag, a missing or repeated entry fail', () => {
    assert.ok(sameDarwinEntries([...granting].reverse(), granting));
    assert.ok(!sameDarwinEntries(undefined, granting), 'a reader that sees no entry');
    assert.ok(!sameDarwinEntries(granting.slice(1), granting), 'a walk that skips the first entry');
    assert.ok(!sameDarwinEntries([granting[0]!, granting[0]!, granting[0]!], granting), 'a walk that reads the first entry again');
    assert.ok(
      !sameDarwinEntries(
        granting.map((e) => ({ ...e, type: e.type === 'allow' ? 'deny' : 'allow' })),
        granting,
      ),
      'allow and deny swapped',
    );
    assert.ok(
      !sameDarwinEntries(
        granting.map((e) => ({ ...e, perms: e.perms << 1 })),
        granting,
      ),
      'permissions read off by a bit',
    );
    assert.ok(
      !sameDarwinEntries(
        granting.map((e) => ({ ...e, flags: 0 })),
        granting,
      ),
      'flags not read',
    );
  });

  it('macOS: the positive control has two allow entries, one inheritable; the negative two deny entries', () => {
    assert.equal(granting.filter((e) => e.type === 'allow').length, 2);
    assert.ok(granting.some((e) => e.type === 'allow' && e.flags !== 0));
    assert.deepEqual(
      DARWIN_PROOF_ENTRIES.denying.map((e) => e.ace.type),
      ['deny', 'deny'],
    );
  });

  it('FreeBSD: the entries set are found among the trivial ones, SYNCHRONIZE aside; a wrong type, mask or id fails', () => {
    const expected = FREEBSD_PROOF_ENTRIES.granting.map((e) => e.ace);
    const trivial: Nfs4Ace[] = [{ type: NFS4_ACE_TYPE.ALLOW, flag: 0, mask: 0x1f01ff, who: 'OWNER@' }];
    assert.ok(holdsNfs4Entries([...trivial, ...expected.map((e) => ({ ...e, mask: e.mask | 0x100000 }))], expected));
    assert.ok(!holdsNfs4Entries(trivial, expected), 'a reader that sees only the trivial entries');
    assert.ok(!holdsNfs4Entries([...trivial, ...expected.map((e) => ({ ...e, type: NFS4_ACE_TYPE.DENY }))], expected), 'every entry read as deny');
    assert.ok(!holdsNfs4Entries([...trivial, ...expected.map((e) => ({ ...e, mask: 0 }))], expected), 'permissions not read');
    assert.ok(!holdsNfs4Entries([...trivial, ...expected.map((e) => ({ ...e, uid: undefined, gid: undefined }))], expected), 'ids not read');
  });
});

describe("FreeBSD's NFSv4 permission bits, as RFC 7530 access bits", () => {
  it("maps each of FreeBSD's fourteen bits (ACL_FULL_SET, 0xfff9) to a distinct RFC bit", () => {
    assert.equal(
      FREEBSD_NFS4_PERMS.reduce((all, [bit]) => all | bit, 0),
      0xfff9,
    );
    assert.equal(new Set(FREEBSD_NFS4_PERMS.map(([, rfc]) => rfc)).size, 14);
    for (const [bit, rfc] of FREEBSD_NFS4_PERMS) {
      assert.equal(bit & (bit - 1), 0, `0x${bit.toString(16)} is one bit`);
      assert.equal(rfc & (rfc - 1), 0, `0x${rfc.toString(16)} is one bit`);
    }
  });

  it('write_data, append_data, delete_child, delete, write_acl and write_owner are what the writer check counts as write', () => {
    const rfcOf = (bit: number) => FREEBSD_NFS4_PERMS.find(([freebsd]) => freebsd === bit)![1];
    const writing = [0x10, 0x20, 0x100, 0x800, 0x2000, 0x4000].map(rfcOf).reduce((a, b) => a | b, 0);
    assert.equal(writing, NFS4_WRITE_MASK);
  });
});

describe('the writer check on the NFSv4 entries the FreeBSD reader gives', () => {
  const ME = 1001;
  const judge = (aces: Nfs4Ace[], level: 'holding' | 'folder' | 'file' = 'folder') =>
    directoryWritersProblem({ uid: ME, gid: ME, mode: level === 'file' ? 0o100644 : 0o40755 }, '/z/p/agents', ME, {
      acl: { kind: 'nfs4', aces } satisfies DirectoryAcl,
      level,
      platform: 'freebsd',
    });
  const trivial: Nfs4Ace[] = [
    { type: NFS4_ACE_TYPE.ALLOW, flag: 0, mask: 0x1f01ff, who: 'OWNER@' },
    { type: NFS4_ACE_TYPE.ALLOW, flag: NFS4_ACE_FLAG.IDENTIFIER_GROUP, mask: 0x1200a9, who: 'GROUP@' },
    { type: NFS4_ACE_TYPE.ALLOW, flag: 0, mask: 0x1200a9, who: 'EVERYONE@' },
  ];
  const user = (uid: number, type: number = NFS4_ACE_TYPE.ALLOW): Nfs4Ace => ({ type, flag: 0, mask: 0x2, who: `user:${uid}`, uid });

  it("a trivial ACL (the mode's entries) and the server user's or root's own entries are sound", () => {
    assert.equal(judge(trivial), undefined);
    assert.equal(judge([...trivial, user(ME), user(0)]), undefined);
  });

  it('another user allowed to write is refused with setfacl -b, recursive for a folder', () => {
    assert.match(
      judge([...trivial, user(65534)]) ?? '',
      /^\/z\/p\/agents is writable by user (\S+ \()?uid 65534\)? through its NFSv4 ACL entry allowing user:65534 access mask 0x2; .*\(fix: setfacl -R -b \/z\/p\/agents, or remove the entry with setfacl -x \(getfacl \/z\/p\/agents lists it\)\)$/,
    );
    assert.match(judge([...trivial, user(65534)], 'file') ?? '', /\(fix: setfacl -b \/z\/p\/agents, /);
  });

  it('a deny entry grants nothing', () => {
    assert.equal(judge([...trivial, user(65534, NFS4_ACE_TYPE.DENY)]), undefined);
  });

  it('an inherit-only allow entry counts on a folder, for what will be created in it', () => {
    const inherited = { ...user(65534), flag: NFS4_ACE_FLAG.INHERIT_ONLY | NFS4_ACE_FLAG.FILE_INHERIT };
    assert.match(judge([...trivial, inherited]) ?? '', /through its inherit-only NFSv4 ACL entry \(for what is created in it\)/);
    assert.equal(judge([...trivial, inherited], 'file'), undefined);
  });
});

describe("the remembered ACL proof is keyed on the proof's code", () => {
  it('a digest of the reader and the proof, the same within a build; another digest is another key', () => {
    assert.match(aclProofCode(), /^sha256:[0-9a-f]{64}$/);
    assert.equal(aclProofCode(), aclProofCode());
    const env = { ...process.env, LD_PRELOAD: '', LD_AUDIT: '' };
    const key = proofKey('acl', env, aclProofCode());
    if (key === undefined) return; // a system whose identity cannot be told remembers nothing
    assert.notEqual(key, proofKey('acl', env, 'sha256:another'));
    assert.notEqual(key, proofKey('acl', env));
  });
});

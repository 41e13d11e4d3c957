import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Koffi from 'koffi';
import { errnoError, loadKoffi, proveInChild } from '../confinement/index.js';

// A directory's or file's extended ACL, as the kernel would apply it, read by
// path (the walk above the project root) or by descriptor (what the server
// reads below it: policies/, agents/, AGENTS.md, .symbiont/). The
// mode bits alone hide writers: with a POSIX ACL, `setfacl -m u:bob:rwx DIR`
// lets bob rename entries while `ls -l` shows only the mask in the group bits.
// Node.js has no xattr or ACL API, so the platform's C interface is called
// through koffi, as the confinement routes do (confinement/libc-route.ts).
//
// - Linux: the access ACL is the `system.posix_acl_access` extended attribute
//   (lgetxattr(2) by path, fgetxattr(2) by descriptor; acl(5)). Its value (include/uapi/linux/posix_acl_xattr.h) is
//   a little-endian u32 version 2, then 8-byte entries: u16 tag, u16 perm,
//   u32 id. Tags: USER_OBJ 0x01, USER 0x02, GROUP_OBJ 0x04, GROUP 0x08,
//   MASK 0x10, OTHER 0x20; perm bits: read 4, write 2, execute 1. ENODATA means
//   no ACL, ENOTSUP a file system without them: the mode bits are then the
//   whole answer. The access ACL decides who can change the directory; the
//   default ACL (`system.posix_acl_default`, same format) shapes what is
//   created in it later, and is read for the folders below the root.
// - Linux NFSv4 mounts: the NFS client has no POSIX ACL handler (EOPNOTSUPP
//   above); it exposes the server's ACL as `system.nfs4_acl`, the XDR form of
//   the NFSv4 `acl` attribute (RFC 7530 section 6.2.1): a big-endian u32
//   count, then per entry u32 type, flag and access mask and the principal
//   (`who`) as a u32 length and its bytes padded to 4. That is read when the
//   POSIX attribute is unsupported; a file system answering EOPNOTSUPP to both
//   (CIFS, FUSE, vfat) has no ACL this server can read, which is said, not
//   hidden.
// - macOS: acl_get_link_np(path, ACL_TYPE_EXTENDED = 0x100), or acl_get_fd_np(fd, same), returns NULL with
//   ENOENT when there is no ACL. Entries are walked with acl_get_entry
//   (ACL_FIRST_ENTRY = 0, ACL_NEXT_ENTRY = -1; -1 with EINVAL past the last)
//   and acl_get_tag_type (ACL_EXTENDED_ALLOW = 1, ACL_EXTENDED_DENY = 2). A deny
//   entry never grants anything (home folders carry "everyone deny delete"),
//   so only allow entries count; this server does not interpret their
//   permissions and distrusts any.
// - FreeBSD: acl_get_link_np(path, type), or acl_get_fd_np(fd, type), for ACL_TYPE_NFS4 (4, ZFS) and
//   ACL_TYPE_ACCESS (2, UFS); EINVAL or EOPNOTSUPP means the file system does
//   not use that kind. acl_is_trivial_np says whether an ACL only repeats the
//   mode bits; any other ACL is distrusted, not interpreted.
// An ACL that cannot be read is distrusted, with the reason.
//
// These calls are proven in a child process before the server makes them
// (ACL_PROOF_SUBJECT, proveAclReaderHere), as the confinement routes are, and
// each call's errno is read right after it returns: out-parameters are caller
// buffers passed as plain pointers, never koffi `_Out_` arguments, which koffi
// converts back after the C function returns and before koffi.errno() runs.

/** One entry of a Linux POSIX access ACL. */
export interface PosixAclEntry {
  tag: number;
  perm: number;
  id: number;
}

export const ACL_TAG = { USER_OBJ: 0x01, USER: 0x02, GROUP_OBJ: 0x04, GROUP: 0x08, MASK: 0x10, OTHER: 0x20 } as const;
export const ACL_PERM = { READ: 4, WRITE: 2, EXECUTE: 1 } as const;

const POSIX_ACL_XATTR = 'system.posix_acl_access';
const POSIX_DEFAULT_ACL_XATTR = 'system.posix_acl_default';
const NFS4_ACL_XATTR = 'system.nfs4_acl';
/** statfs(2) f_type values of file systems whose ACLs may exist where this server cannot read them (linux/magic.h). */
const FILE_SYSTEM_NAMES: ReadonlyMap<number, string> = new Map([
  [0x6969, 'nfs'],
  [0xff534d42, 'cifs'],
  [0xfe534d42, 'smb2'],
  [0x65735546, 'fuse'],
  [0x4d44, 'vfat'],
  [0x2011bab0, 'exfat'],
  [0x01021994, 'tmpfs'],
  [0x858458f6, 'ramfs'],
]);

/** The file system's name for messages ("cifs"), or its statfs type in hex. */
function fileSystemName(target: string | number): string {
  try {
    // statfs has no descriptor form in Node.js; /proc/self/fd/N is the open file itself.
    const type = fs.statfsSync(typeof target === 'number' ? `/proc/self/fd/${target}` : target).type;
    return FILE_SYSTEM_NAMES.get(type) ?? `type 0x${type.toString(16)}`;
  } catch {
    return 'type unknown';
  }
}
const POSIX_ACL_XATTR_VERSION = 2;
const POSIX_ACL_HEADER_BYTES = 4;
const POSIX_ACL_ENTRY_BYTES = 8;
/** Linux limits an xattr value to 64 KiB (XATTR_SIZE_MAX). */
const XATTR_SIZE_MAX = 65536;

const DARWIN_ACL_TYPE_EXTENDED = 0x100;
const DARWIN_ACL_FIRST_ENTRY = 0;
const DARWIN_ACL_NEXT_ENTRY = -1;
const DARWIN_ACL_EXTENDED_ALLOW = 1;
const FREEBSD_ACL_TYPE_ACCESS = 2;
const FREEBSD_ACL_TYPE_NFS4 = 4;

/** One entry of an NFSv4 ACL (RFC 7530 section 6.2.1). */
export interface Nfs4Ace {
  type: number;
  flag: number;
  mask: number;
  /** The principal: OWNER@, GROUP@, EVERYONE@, another special name, or a user or group ("bob@example.com"). */
  who: string;
}

export const NFS4_ACE_TYPE = { ALLOW: 0, DENY: 1, AUDIT: 2, ALARM: 3 } as const;
export const NFS4_ACE_FLAG = { FILE_INHERIT: 0x1, DIRECTORY_INHERIT: 0x2, INHERIT_ONLY: 0x8, IDENTIFIER_GROUP: 0x40 } as const;
/**
 * The access bits that let a principal add, remove or rename a directory's entries, or
 * give itself that right: ADD_FILE 0x2, ADD_SUBDIRECTORY 0x4, DELETE_CHILD 0x40,
 * DELETE 0x10000, WRITE_ACL 0x40000, WRITE_OWNER 0x80000 (RFC 7530 section 6.2.1.3.1).
 */
export const NFS4_WRITE_MASK = 0x2 | 0x4 | 0x40 | 0x10000 | 0x40000 | 0x80000;

/** What a directory's extended ACL adds to its mode bits. */
export type DirectoryAcl =
  /** No extended ACL: the mode bits say who can write. */
  | { kind: 'none' }
  /**
   * A Linux access ACL, to be read entry by entry (`entries` empty when the mode bits are the
   * whole access ACL), and a folder's default ACL (`defaults`), which what is created inside inherits.
   */
  | { kind: 'posix'; entries: PosixAclEntry[]; defaults?: PosixAclEntry[] }
  /** An NFSv4 ACL (a Linux NFSv4 mount), to be read entry by entry. */
  | { kind: 'nfs4'; aces: Nfs4Ace[] }
  /** A file system that exposes no ACL this server can read: the mode bits are all it sees, and `why` says so. */
  | { kind: 'unreadable'; why: string }
  /** An ACL this server cannot read or does not interpret: the directory is distrusted for `why` (`errno`: the error a failed call gave). */
  | { kind: 'distrusted'; why: string; errno?: string };

/** Parses a `system.posix_acl_access` value; throws an Error saying what is malformed. */
export function parsePosixAcl(value: Uint8Array): PosixAclEntry[] {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (bytes.length < POSIX_ACL_HEADER_BYTES || (bytes.length - POSIX_ACL_HEADER_BYTES) % POSIX_ACL_ENTRY_BYTES !== 0) {
    throw new Error(`its ${bytes.length}-byte value is not a version header followed by 8-byte entries`);
  }
  const version = bytes.readUInt32LE(0);
  if (version !== POSIX_ACL_XATTR_VERSION) throw new Error(`its format version is ${version}, not ${POSIX_ACL_XATTR_VERSION}`);
  const known = new Set<number>(Object.values(ACL_TAG));
  const entries: PosixAclEntry[] = [];
  for (let at = POSIX_ACL_HEADER_BYTES; at < bytes.length; at += POSIX_ACL_ENTRY_BYTES) {
    const tag = bytes.readUInt16LE(at);
    if (!known.has(tag)) throw new Error(`it has an entry of unknown tag 0x${tag.toString(16)}`);
    entries.push({ tag, perm: bytes.readUInt16LE(at + 2), id: bytes.readUInt32LE(at + 4) });
  }
  return entries;
}

/** Parses a `system.nfs4_acl` value (XDR, big-endian); throws an Error saying what is malformed. */
export function parseNfs4Acl(value: Uint8Array): Nfs4Ace[] {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const truncated = () => new Error(`its ${bytes.length}-byte NFSv4 ACL ends inside an entry`);
  if (bytes.length < 4) throw truncated();
  const count = bytes.readUInt32BE(0);
  // Each entry takes at least 16 bytes (three words and an empty principal's length).
  if (count > (bytes.length - 4) / 16) throw new Error(`its NFSv4 ACL claims ${count} entries in ${bytes.length} bytes`);
  const aces: Nfs4Ace[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 16 > bytes.length) throw truncated();
    const [type, flag, mask, length] = [0, 4, 8, 12].map((offset) => bytes.readUInt32BE(at + offset)) as [number, number, number, number];
    at += 16;
    const padded = length + ((4 - (length % 4)) % 4);
    if (at + padded > bytes.length) throw truncated();
    aces.push({ type, flag, mask, who: bytes.toString('utf8', at, at + length) });
    at += padded;
  }
  if (at !== bytes.length) throw new Error(`its NFSv4 ACL has ${bytes.length - at} bytes after its last entry`);
  return aces;
}

/** The command that removes a directory's extended ACL on `platform`, for the fix a refusal names. */
export function removeAclCommand(platform: string): string {
  return platform === 'darwin' ? 'chmod -N' : 'setfacl -b';
}

interface AclReader {
  /** The ACL of the file at `path`, never following a symlink at its last component. */
  byPath(path: string): DirectoryAcl;
  /** The ACL of the open file `fd`; a `folder`'s default ACL too, where the platform has one apart. */
  byDescriptor(fd: number, folder: boolean): DirectoryAcl;
}

/** The subject under which the ACL reader is proven in a child process (confinement/route-proof.ts). */
export const ACL_PROOF_SUBJECT = 'acl';

let reader: AclReader | string | undefined;

/**
 * The reader, built once per process after its calls passed their proof in a
 * child process (remembered per system, as a route's proof is): a wrong
 * signature on an unseen system, or a C library that crashes in these calls,
 * costs the child, never the server. Otherwise the reason nothing can be read.
 */
function aclReader(): AclReader | string {
  if (reader === undefined) {
    const proof = proveInChild(ACL_PROOF_SUBJECT, process.env, {});
    if (!proof.ok) {
      reader = `the ACL reader ${proof.reason}`;
    } else {
      try {
        reader = createReader(loadKoffi(), process.platform);
      } catch (err) {
        reader = `this system's ACL interface cannot be called (${(err as Error).message})`;
      }
    }
  }
  return reader;
}

/** Why no directory's ACL can be read in this process (its reader was refused), or undefined when the reader is usable. */
export function aclReaderProblem(): string | undefined {
  const current = aclReader();
  return typeof current === 'string' ? current : undefined;
}

/** The extended ACL of the directory at `path` (never following a symlink at its last component). */
export function readDirectoryAcl(path: string): DirectoryAcl {
  const current = aclReader();
  return typeof current === 'string' ? { kind: 'distrusted', why: `its ACL cannot be read: ${current}` } : current.byPath(path);
}

/** The extended ACL of the open file or folder `fd` (a folder's default ACL with it on Linux). */
export function readDescriptorAcl(fd: number, folder: boolean): DirectoryAcl {
  const current = aclReader();
  return typeof current === 'string' ? { kind: 'distrusted', why: `its ACL cannot be read: ${current}` } : current.byDescriptor(fd, folder);
}

/** The errno's name (EACCES), as Node's own errors give it. */
function errnoName(errno: number): string {
  return errnoError(errno, 'acl').code ?? `errno ${errno}`;
}

/** The directory is distrusted because a call failed with `code`. */
function failedCall(code: number, what = 'its ACL'): DirectoryAcl {
  const name = errnoName(code);
  return { kind: 'distrusted', why: `${what} cannot be read (${name})`, errno: name };
}

function createReader(koffi: typeof Koffi, platform: string): AclReader {
  const libc = koffi.load(null);
  const errno = os.constants.errno;
  // Every `koffi.errno()` below is the first thing after the call that failed: nothing else calls into C in between.
  switch (platform) {
    case 'linux': {
      const lgetxattr = libc.func('long lgetxattr(const char *, const char *, void *, size_t)');
      const fgetxattr = libc.func('long fgetxattr(int, const char *, void *, size_t)');
      const unsupported = new Set([errno.ENOTSUP, errno.EOPNOTSUPP]);
      /** The attribute's value, or the errno that refused it; a value that grew between the two calls is read again. */
      const readAttribute = (target: string | number, name: string): Buffer | number => {
        const get = (value: Buffer | null, size: number): number =>
          Number(typeof target === 'number' ? fgetxattr(target, name, value, size) : lgetxattr(target, name, value, size));
        for (let attempt = 0; attempt < 3; attempt++) {
          const size = get(null, 0);
          if (size < 0) return koffi.errno();
          const value = Buffer.alloc(Math.min(size, XATTR_SIZE_MAX));
          const read = get(value, value.length);
          if (read >= 0) return value.subarray(0, read);
          const code = koffi.errno();
          if (code !== errno.ERANGE) return code;
        }
        return errno.ERANGE;
      };
      const read = (target: string | number, folder: boolean): DirectoryAcl => {
        const posix = readAttribute(target, POSIX_ACL_XATTR);
        if (typeof posix === 'number' && posix !== errno.ENODATA) {
          if (!unsupported.has(posix)) return failedCall(posix);
          // No POSIX ACLs on this file system: an NFSv4 mount keeps its ACL in another attribute.
          const nfs4 = readAttribute(target, NFS4_ACL_XATTR);
          if (typeof nfs4 !== 'number') {
            try {
              return { kind: 'nfs4', aces: parseNfs4Acl(nfs4) };
            } catch (err) {
              return { kind: 'distrusted', why: `its ACL cannot be read: ${(err as Error).message}` };
            }
          }
          if (nfs4 === errno.ENODATA) return { kind: 'none' };
          if (!unsupported.has(nfs4)) return failedCall(nfs4);
          return {
            kind: 'unreadable',
            why: `its file system (${fileSystemName(target)}) exposes neither a POSIX nor an NFSv4 ACL (EOPNOTSUPP), so only its mode bits were read`,
          };
        }
        let entries: PosixAclEntry[] = [];
        let defaults: PosixAclEntry[] = [];
        try {
          if (typeof posix !== 'number') entries = parsePosixAcl(posix);
          if (folder) {
            const inherited = readAttribute(target, POSIX_DEFAULT_ACL_XATTR);
            if (typeof inherited !== 'number') defaults = parsePosixAcl(inherited);
            else if (inherited !== errno.ENODATA) return failedCall(inherited, 'its default ACL');
          }
        } catch (err) {
          return { kind: 'distrusted', why: `its ACL cannot be read: ${(err as Error).message}` };
        }
        if (typeof posix === 'number' && defaults.length === 0) return { kind: 'none' };
        return defaults.length === 0 ? { kind: 'posix', entries } : { kind: 'posix', entries, defaults };
      };
      return { byPath: (dir) => read(dir, false), byDescriptor: read };
    }
    case 'darwin': {
      const getLink = libc.func('void *acl_get_link_np(const char *, int)');
      const getFd = libc.func('void *acl_get_fd_np(int, int)');
      // acl_entry_t * and acl_tag_t * are caller buffers (see the top of this file).
      const getEntry = libc.func('int acl_get_entry(void *, int, void *)');
      const getTag = libc.func('int acl_get_tag_type(void *, void *)');
      const free = libc.func('int acl_free(void *)');
      // Inheritable entries are entries too: any allow entry, whatever it applies to, is distrusted.
      const read = (target: string | number): DirectoryAcl => {
        const acl = (typeof target === 'number' ? getFd(target, DARWIN_ACL_TYPE_EXTENDED) : getLink(target, DARWIN_ACL_TYPE_EXTENDED)) as unknown;
        if (acl === null) {
          const code = koffi.errno();
          return code === errno.ENOENT ? { kind: 'none' } : failedCall(code);
        }
        try {
          // acl_entry_t is a pointer: 8 bytes on the 64-bit systems served (libc-route.ts refuses others).
          const entry = Buffer.alloc(8);
          const tag = new Int32Array(1);
          for (let which = DARWIN_ACL_FIRST_ENTRY; ; which = DARWIN_ACL_NEXT_ENTRY) {
            if (getEntry(acl, which, entry) !== 0) {
              const code = koffi.errno();
              return code === errno.EINVAL ? { kind: 'none' } : failedCall(code);
            }
            if (getTag(koffi.decode(entry, 'void *'), tag) !== 0) return failedCall(koffi.errno(), 'an entry of its ACL');
            if (tag[0] === DARWIN_ACL_EXTENDED_ALLOW) {
              return { kind: 'distrusted', why: 'its ACL has an allow entry (ls -led shows it), and this server does not interpret macOS ACL permissions' };
            }
          }
        } finally {
          free(acl);
        }
      };
      return { byPath: read, byDescriptor: (fd) => read(fd) };
    }
    case 'freebsd': {
      const getLink = libc.func('void *acl_get_link_np(const char *, int)');
      const getFd = libc.func('void *acl_get_fd_np(int, int)');
      // int * is a caller buffer (see the top of this file).
      const isTrivial = libc.func('int acl_is_trivial_np(void *, void *)');
      const free = libc.func('int acl_free(void *)');
      const notThisKind = new Set([errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP]);
      // An NFSv4 ACL with inheritable entries is not trivial; a UFS folder's POSIX.1e default ACL is not read.
      const read = (target: string | number): DirectoryAcl => {
        for (const type of [FREEBSD_ACL_TYPE_NFS4, FREEBSD_ACL_TYPE_ACCESS]) {
          const acl = (typeof target === 'number' ? getFd(target, type) : getLink(target, type)) as unknown;
          if (acl === null) {
            const code = koffi.errno();
            if (notThisKind.has(code)) continue;
            return failedCall(code);
          }
          try {
            const trivial = new Int32Array(1);
            if (isTrivial(acl, trivial) !== 0) return failedCall(koffi.errno());
            if (trivial[0] === 0) {
              return { kind: 'distrusted', why: 'it has an extended ACL (getfacl shows it), and this server does not interpret FreeBSD ACL entries' };
            }
          } finally {
            free(acl);
          }
        }
        return { kind: 'none' };
      };
      return { byPath: read, byDescriptor: (fd) => read(fd) };
    }
    default:
      throw new Error(`no ACL interface is known for ${platform}`);
  }
}

const UNDEFINED_ID = 0xffffffff;
/** The uid and gid the Linux proof names in its entries: nobody and nogroup. */
const PROOF_ID = 65534;

/**
 * POSIX ACL entries the Linux proof sets on its scratch folder: named user and
 * group entries with write, and a mask `maskPerm` that lets them write (7, the
 * positive control) or takes write away (5, the negative control).
 */
export function proofPosixEntries(maskPerm: number): PosixAclEntry[] {
  return [
    { tag: ACL_TAG.USER_OBJ, perm: 7, id: UNDEFINED_ID },
    { tag: ACL_TAG.USER, perm: 7, id: PROOF_ID },
    { tag: ACL_TAG.GROUP_OBJ, perm: 5, id: UNDEFINED_ID },
    { tag: ACL_TAG.GROUP, perm: 7, id: PROOF_ID },
    { tag: ACL_TAG.MASK, perm: maskPerm, id: UNDEFINED_ID },
    { tag: ACL_TAG.OTHER, perm: 0, id: UNDEFINED_ID },
  ];
}

/** The `system.posix_acl_access` (or `_default`) value of `entries`, as setfacl would write it. */
export function posixAclValue(entries: readonly PosixAclEntry[]): Buffer {
  const value = Buffer.alloc(POSIX_ACL_HEADER_BYTES + entries.length * POSIX_ACL_ENTRY_BYTES);
  value.writeUInt32LE(POSIX_ACL_XATTR_VERSION, 0);
  entries.forEach(({ tag, perm, id }, i) => {
    const at = POSIX_ACL_HEADER_BYTES + i * POSIX_ACL_ENTRY_BYTES;
    value.writeUInt16LE(tag, at);
    value.writeUInt16LE(perm, at + 2);
    value.writeUInt32LE(id, at + 4);
  });
  return value;
}

/** One ACL the proof gives its scratch folder, and what reading it back must give. */
interface ProofControl {
  what: string;
  set: () => boolean;
  /** Whether `acl`, read by path or by descriptor, is what was set. */
  expected: (acl: DirectoryAcl, how: 'path' | 'descriptor') => boolean;
}

/** A short text of what was read, for a failed proof's one line (the parent reads its first 300 characters): `posix u::7,u:65534:5,...`. */
function readText(acl: DirectoryAcl): string {
  if (acl.kind !== 'posix') return JSON.stringify(acl);
  const letters: Record<number, string> = {
    [ACL_TAG.USER_OBJ]: 'u',
    [ACL_TAG.USER]: 'u',
    [ACL_TAG.GROUP_OBJ]: 'g',
    [ACL_TAG.GROUP]: 'g',
    [ACL_TAG.MASK]: 'm',
    [ACL_TAG.OTHER]: 'o',
  };
  const text = (entries: readonly PosixAclEntry[]) =>
    entries.map((e) => `${letters[e.tag] ?? `0x${e.tag.toString(16)}`}:${e.id === UNDEFINED_ID ? '' : e.id}:${e.perm}`).join(',');
  return `posix ${text(acl.entries)}${acl.defaults === undefined ? '' : ` default ${text(acl.defaults)}`}`;
}

const sameEntries = (a: readonly PosixAclEntry[] | undefined, b: readonly PosixAclEntry[]) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The ACLs the proof gives its scratch folder with the system's own means, in
 * order, so the reader's calls on ACLs with entries run too, each to be read
 * back by path and by descriptor. Linux, through lsetxattr (the one call only
 * the proof makes): a positive control (named user and group entries writing
 * through an rwx mask) and a negative one (the same entries under an r-x
 * mask), which must read back entry for entry, so a wrong tag, permission or
 * layout constant fails here; then a default ACL, which a folder read by
 * descriptor must show. macOS, chmod +a with a deny entry. Empty where none
 * could be set (a file system without ACLs; FreeBSD, whose UFS needs them
 * mounted in and whose ZFS gives every directory a trivial NFSv4 ACL already).
 */
function scratchControls(koffi: typeof Koffi, dir: string): ProofControl[] {
  if (process.platform === 'linux') {
    const lsetxattr = koffi.load(null).func('int lsetxattr(const char *, const char *, void *, size_t, int)');
    const set = (name: string, entries: PosixAclEntry[]) => () => {
      const value = posixAclValue(entries);
      return lsetxattr(dir, name, value, value.length, 0) === 0;
    };
    const access = (acl: DirectoryAcl, mask: number) => acl.kind === 'posix' && sameEntries(acl.entries, proofPosixEntries(mask));
    return [
      { what: 'an access ACL whose named entries write', set: set(POSIX_ACL_XATTR, proofPosixEntries(7)), expected: (acl) => access(acl, 7) },
      { what: 'an access ACL whose mask takes write away', set: set(POSIX_ACL_XATTR, proofPosixEntries(5)), expected: (acl) => access(acl, 5) },
      {
        what: 'a default ACL',
        set: set(POSIX_DEFAULT_ACL_XATTR, proofPosixEntries(7)),
        // By path only the access ACL is read; by descriptor a folder's default ACL too.
        expected: (acl, how) =>
          access(acl, 5) && acl.kind === 'posix' && (how === 'path' ? acl.defaults === undefined : sameEntries(acl.defaults, proofPosixEntries(7))),
      },
    ];
  }
  if (process.platform === 'darwin') {
    return [
      {
        what: 'a deny entry',
        set: () => spawnSync('/bin/chmod', ['+a', 'everyone deny delete', dir], { stdio: 'ignore' }).status === 0,
        // A deny entry grants nothing: the walk over the entries ends (EINVAL) with no allow entry found.
        expected: (acl) => acl.kind === 'none',
      },
    ];
  }
  return [];
}

/**
 * In the proving child (`symbi route-proof acl`): builds the reader and runs
 * each of its calls on a private scratch directory under the temporary
 * directory: a path through a regular file, which must fail with ENOTDIR, so
 * errno is known to be read from the call that set it; the same for a closed
 * descriptor, which must fail with EBADF; the directory as created (any answer
 * but a failed call passes); the same with an ACL entry given to it where the
 * system allows (it must read back as set, by path and by descriptor). Says how it went.
 */
export function proveAclReaderHere(): { ok: true } | { ok: false; reason: string } {
  let koffi: typeof Koffi;
  let reader: AclReader;
  try {
    koffi = loadKoffi();
    reader = createReader(koffi, process.platform);
  } catch (err) {
    return { ok: false, reason: `cannot be used: ${(err as Error).message}` };
  }
  const failed = (check: string, detail: string) => ({ ok: false as const, reason: `failed its self-test: ${check}: ${detail}` });
  let root: string;
  try {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-acl-proof-'));
    fs.writeFileSync(path.join(root, 'file'), '');
  } catch (err) {
    return failed('a scratch directory can be set up', `${os.tmpdir()}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  /** The scratch directory's ACL read through a descriptor opened for it. */
  const byDescriptor = (): DirectoryAcl => {
    const fd = fs.openSync(root, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    try {
      return reader.byDescriptor(fd, true);
    } finally {
      fs.closeSync(fd);
    }
  };
  try {
    const through = reader.byPath(path.join(root, 'file', 'x'));
    if (through.kind !== 'distrusted' || through.errno !== 'ENOTDIR') {
      return failed('a path through a file fails with ENOTDIR, read right after the call', `read as ${JSON.stringify(through)}`);
    }
    const closed = reader.byDescriptor(-1, false);
    if (closed.kind !== 'distrusted' || closed.errno !== 'EBADF') {
      return failed('a descriptor that is not open fails with EBADF, read right after the call', `read as ${JSON.stringify(closed)}`);
    }
    const fresh = reader.byPath(root);
    if (fresh.kind === 'distrusted' && fresh.errno !== undefined) return failed('a new directory is read', fresh.why);
    const freshFd = byDescriptor();
    if (freshFd.kind === 'distrusted' && freshFd.errno !== undefined) return failed('a new directory is read by descriptor', freshFd.why);
    for (const control of scratchControls(koffi, root)) {
      // A file system that refuses the first ACL has none to read back: what was proven above stands.
      if (!control.set()) break;
      const byPath = reader.byPath(root);
      if (!control.expected(byPath, 'path')) return failed(`a directory given ${control.what} reads as set`, `read as ${readText(byPath)}`);
      const byFd = byDescriptor();
      if (!control.expected(byFd, 'descriptor')) return failed(`a directory given ${control.what} reads as set by descriptor`, `read as ${readText(byFd)}`);
    }
    return { ok: true };
  } finally {
    // Plain unlink and rmdir: a recursive removal may call libc's fdopendir, which this child is not here to prove.
    // macOS: the deny entry forbids deleting the folder until its ACL is removed.
    if (process.platform === 'darwin') spawnSync('/bin/chmod', ['-N', root], { stdio: 'ignore' });
    try {
      fs.unlinkSync(path.join(root, 'file'));
      fs.rmdirSync(root);
    } catch {
      // Best effort: a scratch folder left in the temporary directory costs only its space.
    }
  }
}

import fs from 'node:fs';
import os from 'node:os';
import type Koffi from 'koffi';
import { errnoError, loadKoffi } from '../confinement/index.js';

// A directory's extended ACL, as the kernel would apply it, read by path. The
// mode bits alone hide writers: with a POSIX ACL, `setfacl -m u:bob:rwx DIR`
// lets bob rename entries while `ls -l` shows only the mask in the group bits.
// Node.js has no xattr or ACL API, so the platform's C interface is called
// through koffi, as the confinement routes do (confinement/libc-route.ts).
//
// - Linux: the access ACL is the `system.posix_acl_access` extended attribute
//   (lgetxattr(2), acl(5)). Its value (include/uapi/linux/posix_acl_xattr.h) is
//   a little-endian u32 version 2, then 8-byte entries: u16 tag, u16 perm,
//   u32 id. Tags: USER_OBJ 0x01, USER 0x02, GROUP_OBJ 0x04, GROUP 0x08,
//   MASK 0x10, OTHER 0x20; perm bits: read 4, write 2, execute 1. ENODATA means
//   no ACL, ENOTSUP a file system without them: the mode bits are then the
//   whole answer. Only the access ACL decides who can change the directory;
//   the default ACL shapes what is created in it later.
// - Linux NFSv4 mounts: the NFS client has no POSIX ACL handler (EOPNOTSUPP
//   above); it exposes the server's ACL as `system.nfs4_acl`, the XDR form of
//   the NFSv4 `acl` attribute (RFC 7530 section 6.2.1): a big-endian u32
//   count, then per entry u32 type, flag and access mask and the principal
//   (`who`) as a u32 length and its bytes padded to 4. That is read when the
//   POSIX attribute is unsupported; a file system answering EOPNOTSUPP to both
//   (CIFS, FUSE, vfat) has no ACL this server can read, which is said, not
//   hidden.
// - macOS: acl_get_link_np(path, ACL_TYPE_EXTENDED = 0x100) returns NULL with
//   ENOENT when there is no ACL. Entries are walked with acl_get_entry
//   (ACL_FIRST_ENTRY = 0, ACL_NEXT_ENTRY = -1; -1 with EINVAL past the last)
//   and acl_get_tag_type (ACL_EXTENDED_ALLOW = 1, ACL_EXTENDED_DENY = 2). A deny
//   entry never grants anything (home folders carry "everyone deny delete"),
//   so only allow entries count; this server does not interpret their
//   permissions and distrusts any.
// - FreeBSD: acl_get_link_np(path, type) for ACL_TYPE_NFS4 (4, ZFS) and
//   ACL_TYPE_ACCESS (2, UFS); EINVAL or EOPNOTSUPP means the file system does
//   not use that kind. acl_is_trivial_np says whether an ACL only repeats the
//   mode bits; any other ACL is distrusted, not interpreted.
// An ACL that cannot be read is distrusted, with the reason.

/** One entry of a Linux POSIX access ACL. */
export interface PosixAclEntry {
  tag: number;
  perm: number;
  id: number;
}

export const ACL_TAG = { USER_OBJ: 0x01, USER: 0x02, GROUP_OBJ: 0x04, GROUP: 0x08, MASK: 0x10, OTHER: 0x20 } as const;
export const ACL_PERM = { READ: 4, WRITE: 2, EXECUTE: 1 } as const;

const POSIX_ACL_XATTR = 'system.posix_acl_access';
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
function fileSystemName(path: string): string {
  try {
    const type = fs.statfsSync(path).type;
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
export const NFS4_ACE_FLAG = { INHERIT_ONLY: 0x8, IDENTIFIER_GROUP: 0x40 } as const;
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
  /** A Linux access ACL, to be read entry by entry. */
  | { kind: 'posix'; entries: PosixAclEntry[] }
  /** An NFSv4 ACL (a Linux NFSv4 mount), to be read entry by entry. */
  | { kind: 'nfs4'; aces: Nfs4Ace[] }
  /** A file system that exposes no ACL this server can read: the mode bits are all it sees, and `why` says so. */
  | { kind: 'unreadable'; why: string }
  /** An ACL this server cannot read or does not interpret: the directory is distrusted for `why`. */
  | { kind: 'distrusted'; why: string };

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

type AclReader = (path: string) => DirectoryAcl;

let reader: AclReader | string | undefined;

/** The extended ACL of the directory at `path` (never following a symlink at its last component). */
export function readDirectoryAcl(path: string): DirectoryAcl {
  if (reader === undefined) {
    try {
      reader = createReader(loadKoffi(), process.platform);
    } catch (err) {
      reader = `this system's ACL interface cannot be called (${(err as Error).message})`;
    }
  }
  return typeof reader === 'string' ? { kind: 'distrusted', why: `its ACL cannot be read: ${reader}` } : reader(path);
}

/** The errno's name (EACCES), as Node's own errors give it. */
function errnoName(errno: number): string {
  return errnoError(errno, 'acl').code ?? `errno ${errno}`;
}

function createReader(koffi: typeof Koffi, platform: string): AclReader {
  const libc = koffi.load(null);
  const errno = os.constants.errno;
  switch (platform) {
    case 'linux': {
      const lgetxattr = libc.func('long lgetxattr(const char *, const char *, void *, size_t)');
      const unsupported = new Set([errno.ENOTSUP, errno.EOPNOTSUPP]);
      /** The attribute's value, or the errno that refused it; a value that grew between the two calls is read again. */
      const readAttribute = (path: string, name: string): Buffer | number => {
        for (let attempt = 0; attempt < 3; attempt++) {
          const size = Number(lgetxattr(path, name, null, 0));
          if (size < 0) return koffi.errno();
          const value = Buffer.alloc(Math.min(size, XATTR_SIZE_MAX));
          const read = Number(lgetxattr(path, name, value, value.length));
          if (read >= 0) return value.subarray(0, read);
          const code = koffi.errno();
          if (code !== errno.ERANGE) return code;
        }
        return errno.ERANGE;
      };
      const unreadableHere = (code: number): DirectoryAcl => ({ kind: 'distrusted', why: `its ACL cannot be read (${errnoName(code)})` });
      return (path) => {
        const posix = readAttribute(path, POSIX_ACL_XATTR);
        if (typeof posix !== 'number') {
          try {
            return { kind: 'posix', entries: parsePosixAcl(posix) };
          } catch (err) {
            return { kind: 'distrusted', why: `its ACL cannot be read: ${(err as Error).message}` };
          }
        }
        if (posix === errno.ENODATA) return { kind: 'none' };
        if (!unsupported.has(posix)) return unreadableHere(posix);
        // No POSIX ACLs on this file system: an NFSv4 mount keeps its ACL in another attribute.
        const nfs4 = readAttribute(path, NFS4_ACL_XATTR);
        if (typeof nfs4 !== 'number') {
          try {
            return { kind: 'nfs4', aces: parseNfs4Acl(nfs4) };
          } catch (err) {
            return { kind: 'distrusted', why: `its ACL cannot be read: ${(err as Error).message}` };
          }
        }
        if (nfs4 === errno.ENODATA) return { kind: 'none' };
        if (!unsupported.has(nfs4)) return unreadableHere(nfs4);
        return { kind: 'unreadable', why: `its file system (${fileSystemName(path)}) exposes neither a POSIX nor an NFSv4 ACL (EOPNOTSUPP), so only its mode bits were read` };
      };
    }
    case 'darwin': {
      const getLink = libc.func('void *acl_get_link_np(const char *, int)');
      const getEntry = libc.func('int acl_get_entry(void *, int, _Out_ void **)');
      const getTag = libc.func('int acl_get_tag_type(void *, _Out_ int *)');
      const free = libc.func('int acl_free(void *)');
      return (path) => {
        const acl = getLink(path, DARWIN_ACL_TYPE_EXTENDED) as unknown;
        if (acl === null) {
          const code = koffi.errno();
          return code === errno.ENOENT ? { kind: 'none' } : { kind: 'distrusted', why: `its ACL cannot be read (${errnoName(code)})` };
        }
        try {
          const entry: [unknown] = [null];
          const tag: [number] = [0];
          for (let which = DARWIN_ACL_FIRST_ENTRY; ; which = DARWIN_ACL_NEXT_ENTRY) {
            if (getEntry(acl, which, entry) !== 0) {
              const code = koffi.errno();
              return code === errno.EINVAL ? { kind: 'none' } : { kind: 'distrusted', why: `its ACL cannot be read (${errnoName(code)})` };
            }
            if (getTag(entry[0], tag) !== 0) return { kind: 'distrusted', why: `an entry of its ACL cannot be read (${errnoName(koffi.errno())})` };
            if (tag[0] === DARWIN_ACL_EXTENDED_ALLOW) {
              return { kind: 'distrusted', why: 'its ACL has an allow entry (ls -led shows it), and this server does not interpret macOS ACL permissions' };
            }
          }
        } finally {
          free(acl);
        }
      };
    }
    case 'freebsd': {
      const getLink = libc.func('void *acl_get_link_np(const char *, int)');
      const isTrivial = libc.func('int acl_is_trivial_np(void *, _Out_ int *)');
      const free = libc.func('int acl_free(void *)');
      const notThisKind = new Set([errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP]);
      return (path) => {
        for (const type of [FREEBSD_ACL_TYPE_NFS4, FREEBSD_ACL_TYPE_ACCESS]) {
          const acl = getLink(path, type) as unknown;
          if (acl === null) {
            const code = koffi.errno();
            if (notThisKind.has(code)) continue;
            return { kind: 'distrusted', why: `its ACL cannot be read (${errnoName(code)})` };
          }
          try {
            const trivial: [number] = [0];
            if (isTrivial(acl, trivial) !== 0) return { kind: 'distrusted', why: `its ACL cannot be read (${errnoName(koffi.errno())})` };
            if (trivial[0] === 0) {
              return { kind: 'distrusted', why: 'it has an extended ACL (getfacl shows it), and this server does not interpret FreeBSD ACL entries' };
            }
          } finally {
            free(acl);
          }
        }
        return { kind: 'none' };
      };
    }
    default:
      throw new Error(`no ACL interface is known for ${platform}`);
  }
}

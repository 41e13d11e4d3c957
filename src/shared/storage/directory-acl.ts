import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Koffi from 'koffi';
import { sha256Hex } from '../canonical-json.js';
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
// - macOS: pathconf(_PC_EXTENDED_SECURITY_NP) first, as a volume without ACLs
//   (NFSv3, smbfs, FUSE, FAT) would otherwise read as having none; then
//   acl_get_link_np(path, ACL_TYPE_EXTENDED = 0x100), or acl_get_fd_np(fd,
//   same), which returns NULL with ENOENT when there is no ACL. Every entry is
//   walked with acl_get_entry (ACL_FIRST_ENTRY = 0, ACL_NEXT_ENTRY = -1; -1
//   with EINVAL past the last), with its tag (acl_get_tag_type:
//   ACL_EXTENDED_ALLOW = 1, ACL_EXTENDED_DENY = 2), permissions
//   (acl_get_permset_mask_np) and flags (acl_get_flagset_np, acl_get_flag_np),
//   which the proof compares with what it set. A deny entry never grants
//   anything (home folders carry "everyone deny delete"), so only the other
//   entries count; this server does not interpret their permissions and
//   distrusts any.
// - FreeBSD: pathconf(_PC_ACL_NFS4) and pathconf(_PC_ACL_EXTENDED) say which
//   kind the file system keeps, if any. An NFSv4 ACL (ZFS, or UFS mounted with
//   nfsv4acls), from acl_get_link_np(path, ACL_TYPE_NFS4 = 4) or
//   acl_get_fd_np, is walked entry by entry (ACL_FIRST_ENTRY = 0,
//   ACL_NEXT_ENTRY = 1; 1 with an entry, 0 past the last) into the RFC 7530
//   terms the Linux NFSv4 reading uses, each user or group entry with its uid
//   or gid, and judged the same way. A POSIX.1e access ACL (UFS mounted with
//   acls, ACL_TYPE_ACCESS = 2) is distrusted unless acl_is_trivial_np says it
//   only repeats the mode bits.
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

// macOS (xnu bsd/sys/acl.h, bsd/sys/kauth.h; Apple Libc posix1e/acl_entry.c), checked against the
// SDK headers (MacOSX SDK usr/include/sys/acl.h and sys/unistd.h, as mirrored in ziglang/zig
// lib/libc/include/any-macos*): acl_get_entry returns 0 with an entry, -1 with EINVAL past the last.
const DARWIN_ACL_TYPE_EXTENDED = 0x100;
const DARWIN_ACL_FIRST_ENTRY = 0;
const DARWIN_ACL_NEXT_ENTRY = -1;
const DARWIN_ACL_EXTENDED_ALLOW = 1;
const DARWIN_ACL_EXTENDED_DENY = 2;
/** KAUTH_ACL_MAX_ENTRIES: a walk that goes on longer did not end. */
const DARWIN_ACL_MAX_ENTRIES = 128;
/** pathconf(2): 1 when the volume supports extended security (ACLs), 0 when not. */
const DARWIN_PC_EXTENDED_SECURITY_NP = 13;
/** acl_perm_t bits (the kauth rights), those the proof sets. */
export const DARWIN_ACL_PERM = { ADD_FILE: 1 << 2, DELETE: 1 << 4, ADD_SUBDIRECTORY: 1 << 5, DELETE_CHILD: 1 << 6 } as const;
/** acl_flag_t bits of an entry: INHERITED, FILE_INHERIT, DIRECTORY_INHERIT, LIMIT_INHERIT, ONLY_INHERIT. */
export const DARWIN_ACL_ENTRY_FLAG = {
  INHERITED: 1 << 4,
  FILE_INHERIT: 1 << 5,
  DIRECTORY_INHERIT: 1 << 6,
  LIMIT_INHERIT: 1 << 7,
  ONLY_INHERIT: 1 << 8,
} as const;

// FreeBSD (sys/sys/acl.h, sys/sys/unistd.h, lib/libc/posix1e/acl_entry.c): acl_get_entry returns 1
// with an entry, 0 past the last, -1 on error; ACL_NEXT_ENTRY is 1, not macOS's -1.
const FREEBSD_ACL_TYPE_ACCESS = 2;
const FREEBSD_ACL_TYPE_NFS4 = 4;
const FREEBSD_ACL_FIRST_ENTRY = 0;
const FREEBSD_ACL_NEXT_ENTRY = 1;
/** ACL_MAX_ENTRIES: a walk that goes on longer did not end. */
const FREEBSD_ACL_MAX_ENTRIES = 254;
/** pathconf(2) names: 1 when the file system uses POSIX.1e ACLs (_PC_ACL_EXTENDED) or NFSv4 ACLs (_PC_ACL_NFS4). */
const FREEBSD_PC_ACL_EXTENDED = 59;
const FREEBSD_PC_ACL_NFS4 = 64;
/** acl_tag_t values. */
export const FREEBSD_ACL_TAG = { USER_OBJ: 0x1, USER: 0x2, GROUP_OBJ: 0x4, GROUP: 0x8, EVERYONE: 0x40 } as const;
/** acl_entry_type_t values, and the NFSv4 ACE type (RFC 7530) each is. */
const FREEBSD_ENTRY_TYPES: ReadonlyMap<number, number> = new Map([
  [0x100, 0], // ALLOW
  [0x200, 1], // DENY
  [0x400, 2], // AUDIT
  [0x800, 3], // ALARM
]);
/** Each FreeBSD NFSv4 acl_perm_t bit and the RFC 7530 access mask bit it is. */
export const FREEBSD_NFS4_PERMS: ReadonlyArray<readonly [freebsd: number, rfc: number]> = [
  [0x8, 0x1], // READ_DATA / LIST_DIRECTORY
  [0x10, 0x2], // WRITE_DATA / ADD_FILE
  [0x20, 0x4], // APPEND_DATA / ADD_SUBDIRECTORY
  [0x40, 0x8], // READ_NAMED_ATTRS
  [0x80, 0x10], // WRITE_NAMED_ATTRS
  [0x1, 0x20], // EXECUTE
  [0x100, 0x40], // DELETE_CHILD
  [0x200, 0x80], // READ_ATTRIBUTES
  [0x400, 0x100], // WRITE_ATTRIBUTES
  [0x800, 0x10000], // DELETE
  [0x1000, 0x20000], // READ_ACL
  [0x2000, 0x40000], // WRITE_ACL
  [0x4000, 0x80000], // WRITE_OWNER
  [0x8000, 0x100000], // SYNCHRONIZE
];
/**
 * FreeBSD's NFSv4 entry flags (acl_flag_t) have the RFC 7530 values: FILE_INHERIT, DIRECTORY_INHERIT, NO_PROPAGATE,
 * INHERIT_ONLY, SUCCESSFUL_ACCESS, FAILED_ACCESS. INHERITED (0x80) is left out: older releases' acl_get_flag_np
 * refuses it (EINVAL), and it changes nothing about who may write.
 */
const FREEBSD_NFS4_FLAGS = [0x1, 0x2, 0x4, 0x8, 0x10, 0x20];

/** One entry of an NFSv4 ACL (RFC 7530 section 6.2.1). */
export interface Nfs4Ace {
  type: number;
  flag: number;
  mask: number;
  /** The principal: OWNER@, GROUP@, EVERYONE@, another special name, or a user or group ("bob@example.com"; on FreeBSD "user:1001", "group:1001"). */
  who: string;
  /** FreeBSD: the uid of a user entry, the gid of a group entry (the kernel's numbers, which the writer check judges as it does mode bits). */
  uid?: number;
  gid?: number;
}

/** One entry of a macOS extended ACL as the reader walked it: its tag, its permission bits and its flags (acl_permset_mask_t, acl_flag_t). */
export interface DarwinAce {
  type: 'allow' | 'deny' | 'other';
  perms: number;
  flags: number;
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
  /** No extended ACL, or (macOS) one of deny entries only, which grant nothing (`walked`): the mode bits say who can write. */
  | { kind: 'none'; walked?: DarwinAce[] }
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
  | { kind: 'distrusted'; why: string; errno?: string; walked?: DarwinAce[] };

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
    const proof = proveInChild(ACL_PROOF_SUBJECT, process.env, {}, aclProofCode());
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

/**
 * A digest of what the ACL proof proves and how: the reader's and the proof's functions (their source
 * text, as this build holds it) and the constants they use. The remembered proof is keyed on it, so a
 * reader or proof that changed is proven again though the package version did not.
 */
export function aclProofCode(): string {
  const functions = [createReader, proveAclReaderHere, scratchControls, freebsdPosixControls, parsePosixAcl, parseNfs4Acl, proofPosixEntries, posixAclValue];
  const constants = {
    darwin: [
      DARWIN_ACL_TYPE_EXTENDED,
      DARWIN_ACL_FIRST_ENTRY,
      DARWIN_ACL_NEXT_ENTRY,
      DARWIN_ACL_EXTENDED_ALLOW,
      DARWIN_ACL_EXTENDED_DENY,
      DARWIN_ACL_MAX_ENTRIES,
    ],
    darwinMore: [DARWIN_PC_EXTENDED_SECURITY_NP, DARWIN_ACL_PERM, DARWIN_ACL_ENTRY_FLAG, DARWIN_PROOF_ENTRIES],
    freebsd: [
      FREEBSD_ACL_TYPE_ACCESS,
      FREEBSD_ACL_TYPE_NFS4,
      FREEBSD_ACL_FIRST_ENTRY,
      FREEBSD_ACL_NEXT_ENTRY,
      FREEBSD_ACL_MAX_ENTRIES,
      FREEBSD_PC_ACL_EXTENDED,
    ],
    freebsdMore: [FREEBSD_PC_ACL_NFS4, FREEBSD_ACL_TAG, [...FREEBSD_ENTRY_TYPES], FREEBSD_NFS4_PERMS, FREEBSD_NFS4_FLAGS, FREEBSD_PROOF_ENTRIES],
    linux: [POSIX_ACL_XATTR, POSIX_DEFAULT_ACL_XATTR, NFS4_ACL_XATTR, ACL_TAG, ACL_PERM, NFS4_ACE_TYPE, NFS4_ACE_FLAG, PROOF_ID],
  };
  return `sha256:${sha256Hex(functions.map((f) => f.toString()).join('\n') + JSON.stringify(constants))}`;
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

// In each reader, every `koffi.errno()` is the first thing after the call that failed: nothing else calls into C in between.
type Libc = ReturnType<(typeof Koffi)['load']>;

/** Linux: the POSIX ACL extended attributes, or an NFSv4 mount's, read by path or descriptor. */
function linuxReader(koffi: typeof Koffi, libc: Libc): AclReader {
  const errno = os.constants.errno;
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

/** macOS: the extended ACL walked entry by entry, after pathconf says the volume has ACLs. */
function darwinReader(koffi: typeof Koffi, libc: Libc): AclReader {
  const errno = os.constants.errno;
  const pathconf = libc.func('long pathconf(const char *, int)');
  const fpathconf = libc.func('long fpathconf(int, int)');
  const getLink = libc.func('void *acl_get_link_np(const char *, int)');
  const getFd = libc.func('void *acl_get_fd_np(int, int)');
  // acl_entry_t *, acl_tag_t *, acl_permset_mask_t * and acl_flagset_t * are caller buffers (see the top of this file).
  const getEntry = libc.func('int acl_get_entry(void *, int, void *)');
  const getTag = libc.func('int acl_get_tag_type(void *, void *)');
  const getPermsetMask = libc.func('int acl_get_permset_mask_np(void *, void *)');
  const getFlagset = libc.func('int acl_get_flagset_np(void *, void *)');
  const getFlag = libc.func('int acl_get_flag_np(void *, int)');
  const free = libc.func('int acl_free(void *)');
  const entryFlags = Object.values(DARWIN_ACL_ENTRY_FLAG);
  // Inheritable entries are entries too: any allow entry, whatever it applies to, is distrusted.
  const read = (target: string | number): DirectoryAcl => {
    // A volume without ACLs (NFSv3, smbfs, FUSE, FAT) answers acl_get_*_np as if no ACL were set: asked first, it is said.
    const supported = Number(typeof target === 'number' ? fpathconf(target, DARWIN_PC_EXTENDED_SECURITY_NP) : pathconf(target, DARWIN_PC_EXTENDED_SECURITY_NP));
    if (supported < 0) return failedCall(koffi.errno(), 'whether its file system has ACLs');
    if (supported === 0) {
      return { kind: 'unreadable', why: 'its file system does not support ACLs (pathconf _PC_EXTENDED_SECURITY_NP is 0), so only its mode bits were read' };
    }
    const acl = (typeof target === 'number' ? getFd(target, DARWIN_ACL_TYPE_EXTENDED) : getLink(target, DARWIN_ACL_TYPE_EXTENDED)) as unknown;
    if (acl === null) {
      const code = koffi.errno();
      return code === errno.ENOENT ? { kind: 'none' } : failedCall(code);
    }
    const walked: DarwinAce[] = [];
    try {
      // acl_entry_t and acl_flagset_t are pointers: 8 bytes on the 64-bit systems served (libc-route.ts refuses others).
      const entry = Buffer.alloc(8);
      const tag = new Int32Array(1);
      const perms = Buffer.alloc(8);
      const flagset = Buffer.alloc(8);
      for (let which = DARWIN_ACL_FIRST_ENTRY; ; which = DARWIN_ACL_NEXT_ENTRY) {
        if (getEntry(acl, which, entry) !== 0) {
          const code = koffi.errno();
          if (code === errno.EINVAL) break;
          return failedCall(code);
        }
        if (walked.length >= DARWIN_ACL_MAX_ENTRIES) {
          return {
            kind: 'distrusted',
            why: `its ACL cannot be read: the walk over its entries did not end after ${DARWIN_ACL_MAX_ENTRIES}, the most macOS keeps`,
          };
        }
        const current = koffi.decode(entry, 'void *') as unknown;
        if (getTag(current, tag) !== 0) return failedCall(koffi.errno(), 'an entry of its ACL');
        if (getPermsetMask(current, perms) !== 0) return failedCall(koffi.errno(), "an entry's permissions in its ACL");
        if (getFlagset(current, flagset) !== 0) return failedCall(koffi.errno(), "an entry's flags in its ACL");
        const set = koffi.decode(flagset, 'void *') as unknown;
        let flags = 0;
        for (const flag of entryFlags) {
          const has = Number(getFlag(set, flag));
          if (has < 0) return failedCall(koffi.errno(), "an entry's flags in its ACL");
          if (has > 0) flags |= flag;
        }
        const type = tag[0] === DARWIN_ACL_EXTENDED_ALLOW ? 'allow' : tag[0] === DARWIN_ACL_EXTENDED_DENY ? 'deny' : 'other';
        walked.push({ type, perms: Number(perms.readBigUInt64LE(0)), flags });
      }
    } finally {
      free(acl);
    }
    // A deny entry never grants anything (home folders carry "everyone deny delete"); any other entry is distrusted.
    const granting = walked.filter((e) => e.type !== 'deny').length;
    if (granting === 0) return walked.length === 0 ? { kind: 'none' } : { kind: 'none', walked };
    const entries = granting === 1 ? 'an allow entry' : `${granting} allow entries`;
    return {
      kind: 'distrusted',
      why: `its ACL has ${entries} (ls -led shows them), and this server does not interpret macOS ACL permissions`,
      walked,
    };
  };
  return { byPath: read, byDescriptor: (fd) => read(fd) };
}

/** FreeBSD: NFSv4 ACLs entry by entry, POSIX.1e ones as trivial or not, after pathconf says which the file system has. */
function freebsdReader(koffi: typeof Koffi, libc: Libc): AclReader {
  const errno = os.constants.errno;
  const lpathconf = libc.func('long lpathconf(const char *, int)');
  const fpathconf = libc.func('long fpathconf(int, int)');
  const getLink = libc.func('void *acl_get_link_np(const char *, int)');
  const getFd = libc.func('void *acl_get_fd_np(int, int)');
  // int *, acl_entry_t *, acl_tag_t *, acl_entry_type_t *, acl_permset_t * and acl_flagset_t * are caller buffers (see the top of this file).
  const isTrivial = libc.func('int acl_is_trivial_np(void *, void *)');
  const getEntry = libc.func('int acl_get_entry(void *, int, void *)');
  const getTag = libc.func('int acl_get_tag_type(void *, void *)');
  const getEntryType = libc.func('int acl_get_entry_type_np(void *, void *)');
  const getPermset = libc.func('int acl_get_permset(void *, void *)');
  const getPerm = libc.func('int acl_get_perm_np(void *, uint32_t)');
  const getFlagset = libc.func('int acl_get_flagset_np(void *, void *)');
  const getFlag = libc.func('int acl_get_flag_np(void *, uint16_t)');
  const getQualifier = libc.func('void *acl_get_qualifier(void *)');
  const free = libc.func('int acl_free(void *)');
  /** Whether the file system uses ACLs of kind `name` (1), or not (0); a negative errno when the call failed. */
  const uses = (target: string | number, name: number): number => {
    const answer = Number(typeof target === 'number' ? fpathconf(target, name) : lpathconf(target, name));
    if (answer >= 0) return answer;
    const code = koffi.errno();
    // EINVAL: the file system does not know the name, so it has no such ACLs.
    return code === errno.EINVAL ? 0 : -code;
  };
  /** An NFSv4 ACL's entries (acl_get_entry, tag, type, permissions, flags, qualifier), as the RFC 7530 values the writer check judges. */
  const walk = (acl: unknown): Nfs4Ace[] | DirectoryAcl => {
    const aces: Nfs4Ace[] = [];
    const entry = Buffer.alloc(8);
    const tag = new Uint32Array(1);
    const type = new Uint16Array(1);
    const pointer = Buffer.alloc(8);
    for (let which = FREEBSD_ACL_FIRST_ENTRY; ; which = FREEBSD_ACL_NEXT_ENTRY) {
      const got = Number(getEntry(acl, which, entry));
      if (got === 0) return aces;
      if (got < 0) return failedCall(koffi.errno());
      if (aces.length >= FREEBSD_ACL_MAX_ENTRIES) {
        return {
          kind: 'distrusted',
          why: `its ACL cannot be read: the walk over its entries did not end after ${FREEBSD_ACL_MAX_ENTRIES}, the most FreeBSD keeps`,
        };
      }
      const current = koffi.decode(entry, 'void *') as unknown;
      if (getTag(current, tag) !== 0 || getEntryType(current, type) !== 0) return failedCall(koffi.errno(), 'an entry of its ACL');
      const aceType = FREEBSD_ENTRY_TYPES.get(type[0]!);
      if (aceType === undefined) return { kind: 'distrusted', why: `its ACL cannot be read: an entry has the unknown type 0x${type[0]!.toString(16)}` };
      if (getPermset(current, pointer) !== 0) return failedCall(koffi.errno(), "an entry's permissions in its ACL");
      const permset = koffi.decode(pointer, 'void *') as unknown;
      let mask = 0;
      for (const [bit, rfc] of FREEBSD_NFS4_PERMS) {
        const has = Number(getPerm(permset, bit));
        if (has < 0) return failedCall(koffi.errno(), "an entry's permissions in its ACL");
        if (has > 0) mask |= rfc;
      }
      if (getFlagset(current, pointer) !== 0) return failedCall(koffi.errno(), "an entry's flags in its ACL");
      const flagset = koffi.decode(pointer, 'void *') as unknown;
      let flag = 0;
      for (const bit of FREEBSD_NFS4_FLAGS) {
        const has = Number(getFlag(flagset, bit));
        if (has < 0) return failedCall(koffi.errno(), "an entry's flags in its ACL");
        if (has > 0) flag |= bit;
      }
      const ace: Nfs4Ace = { type: aceType, flag, mask, who: '' };
      switch (tag[0]) {
        case FREEBSD_ACL_TAG.USER_OBJ:
          ace.who = 'OWNER@';
          break;
        case FREEBSD_ACL_TAG.GROUP_OBJ:
          ace.who = 'GROUP@';
          ace.flag |= NFS4_ACE_FLAG.IDENTIFIER_GROUP;
          break;
        case FREEBSD_ACL_TAG.EVERYONE:
          ace.who = 'EVERYONE@';
          break;
        case FREEBSD_ACL_TAG.USER:
        case FREEBSD_ACL_TAG.GROUP: {
          // The qualifier is a copy of the uid_t or gid_t (a u32), freed with acl_free.
          const qualifier = getQualifier(current) as unknown;
          if (qualifier === null) return failedCall(koffi.errno(), "an entry's user or group in its ACL");
          const id = koffi.decode(qualifier, 'uint32_t') as number;
          free(qualifier);
          if (tag[0] === FREEBSD_ACL_TAG.USER) {
            ace.who = `user:${id}`;
            ace.uid = id;
          } else {
            ace.who = `group:${id}`;
            ace.gid = id;
            ace.flag |= NFS4_ACE_FLAG.IDENTIFIER_GROUP;
          }
          break;
        }
        default:
          return { kind: 'distrusted', why: `its ACL cannot be read: an entry has the unknown tag 0x${tag[0]!.toString(16)}` };
      }
      aces.push(ace);
    }
  };
  // ZFS (and UFS mounted with nfsv4acls) keep NFSv4 ACLs, read entry by entry; UFS mounted with acls keeps POSIX.1e
  // ones, of which any that says more than the mode bits is distrusted (a folder's default ACL is not read).
  const read = (target: string | number): DirectoryAcl => {
    const nfs4 = uses(target, FREEBSD_PC_ACL_NFS4);
    if (nfs4 < 0) return failedCall(-nfs4, 'whether its file system has ACLs');
    const posix = nfs4 > 0 ? 0 : uses(target, FREEBSD_PC_ACL_EXTENDED);
    if (posix < 0) return failedCall(-posix, 'whether its file system has ACLs');
    if (nfs4 === 0 && posix === 0) {
      return {
        kind: 'unreadable',
        why: 'its file system supports neither NFSv4 nor POSIX.1e ACLs (pathconf _PC_ACL_NFS4 and _PC_ACL_EXTENDED are 0), so only its mode bits were read',
      };
    }
    const type = nfs4 > 0 ? FREEBSD_ACL_TYPE_NFS4 : FREEBSD_ACL_TYPE_ACCESS;
    const acl = (typeof target === 'number' ? getFd(target, type) : getLink(target, type)) as unknown;
    if (acl === null) return failedCall(koffi.errno());
    try {
      if (nfs4 > 0) {
        const aces = walk(acl);
        return Array.isArray(aces) ? { kind: 'nfs4', aces } : aces;
      }
      const trivial = new Int32Array(1);
      if (isTrivial(acl, trivial) !== 0) return failedCall(koffi.errno());
      if (trivial[0] === 0) {
        return { kind: 'distrusted', why: 'it has an extended POSIX.1e ACL (getfacl shows it), and this server does not interpret those on FreeBSD' };
      }
      return { kind: 'none' };
    } finally {
      free(acl);
    }
  };
  return { byPath: read, byDescriptor: (fd) => read(fd) };
}

function createReader(koffi: typeof Koffi, platform: string): AclReader {
  const libc = koffi.load(null);
  switch (platform) {
    case 'linux':
      return linuxReader(koffi, libc);
    case 'darwin':
      return darwinReader(koffi, libc);
    case 'freebsd':
      return freebsdReader(koffi, libc);
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
  // macOS: each entry walked as type:permissions:flags; NFSv4: A or D, flags, mask and principal.
  const walked =
    (acl.kind === 'none' || acl.kind === 'distrusted') && acl.walked !== undefined
      ? ` ${acl.walked.map((e) => `${e.type}:0x${e.perms.toString(16)}:0x${e.flags.toString(16)}`).join(',')}`
      : '';
  if (acl.kind === 'nfs4')
    return `nfs4 ${acl.aces.map((a) => `${'ADUL'[a.type] ?? a.type}:0x${a.flag.toString(16)}:0x${a.mask.toString(16)}:${a.who}`).join(',')}`;
  if (acl.kind === 'none' && walked !== '') return `none${walked}`;
  if (acl.kind === 'distrusted' && walked !== '') return `distrusted${walked} (${acl.errno ?? acl.why.slice(0, 60)})`;
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

/** The macOS entries the proof sets, as the reader must walk them: two allow entries and a deny entry, then two deny entries alone. */
export const DARWIN_PROOF_ENTRIES = {
  granting: [
    { text: 'nobody allow add_file,delete_child', ace: { type: 'allow', perms: DARWIN_ACL_PERM.ADD_FILE | DARWIN_ACL_PERM.DELETE_CHILD, flags: 0 } },
    {
      text: 'everyone allow add_subdirectory,file_inherit,directory_inherit',
      ace: { type: 'allow', perms: DARWIN_ACL_PERM.ADD_SUBDIRECTORY, flags: DARWIN_ACL_ENTRY_FLAG.FILE_INHERIT | DARWIN_ACL_ENTRY_FLAG.DIRECTORY_INHERIT },
    },
    { text: 'nobody deny delete', ace: { type: 'deny', perms: DARWIN_ACL_PERM.DELETE, flags: 0 } },
  ],
  denying: [
    { text: 'everyone deny delete', ace: { type: 'deny', perms: DARWIN_ACL_PERM.DELETE, flags: 0 } },
    { text: 'nobody deny add_file,add_subdirectory', ace: { type: 'deny', perms: DARWIN_ACL_PERM.ADD_FILE | DARWIN_ACL_PERM.ADD_SUBDIRECTORY, flags: 0 } },
  ],
} as const satisfies Record<string, ReadonlyArray<{ text: string; ace: DarwinAce }>>;

/** nobody's uid and gid on FreeBSD (/etc/passwd, /etc/group): the principal of the FreeBSD proof's entries. */
const FREEBSD_NOBODY = 65534;
const RFC_ACCESS = { ADD_FILE: 0x2, ADD_SUBDIRECTORY: 0x4, DELETE_CHILD: 0x40, DELETE: 0x10000, SYNCHRONIZE: 0x100000 } as const;
/** The FreeBSD NFSv4 entries the proof sets (setfacl's text), and each as the reader must give it in RFC 7530 terms. */
export const FREEBSD_PROOF_ENTRIES = {
  granting: [
    {
      text: `user:${FREEBSD_NOBODY}:write_data/delete_child::allow`,
      ace: { type: NFS4_ACE_TYPE.ALLOW, flag: 0, mask: RFC_ACCESS.ADD_FILE | RFC_ACCESS.DELETE_CHILD, who: `user:${FREEBSD_NOBODY}`, uid: FREEBSD_NOBODY },
    },
    {
      text: `group:${FREEBSD_NOBODY}:append_data:fd:allow`,
      ace: {
        type: NFS4_ACE_TYPE.ALLOW,
        flag: NFS4_ACE_FLAG.FILE_INHERIT | NFS4_ACE_FLAG.DIRECTORY_INHERIT | NFS4_ACE_FLAG.IDENTIFIER_GROUP,
        mask: RFC_ACCESS.ADD_SUBDIRECTORY,
        who: `group:${FREEBSD_NOBODY}`,
        gid: FREEBSD_NOBODY,
      },
    },
    {
      text: `user:${FREEBSD_NOBODY}:delete::deny`,
      ace: { type: NFS4_ACE_TYPE.DENY, flag: 0, mask: RFC_ACCESS.DELETE, who: `user:${FREEBSD_NOBODY}`, uid: FREEBSD_NOBODY },
    },
  ],
  denying: [
    {
      text: `user:${FREEBSD_NOBODY}:write_data/delete_child::deny`,
      ace: { type: NFS4_ACE_TYPE.DENY, flag: 0, mask: RFC_ACCESS.ADD_FILE | RFC_ACCESS.DELETE_CHILD, who: `user:${FREEBSD_NOBODY}`, uid: FREEBSD_NOBODY },
    },
    {
      text: `group:${FREEBSD_NOBODY}:append_data::deny`,
      ace: {
        type: NFS4_ACE_TYPE.DENY,
        flag: NFS4_ACE_FLAG.IDENTIFIER_GROUP,
        mask: RFC_ACCESS.ADD_SUBDIRECTORY,
        who: `group:${FREEBSD_NOBODY}`,
        gid: FREEBSD_NOBODY,
      },
    },
  ],
} as const satisfies Record<string, ReadonlyArray<{ text: string; ace: Nfs4Ace }>>;

const darwinKey = (e: DarwinAce) => `${e.type}:${e.perms}:${e.flags}`;
/** Whether the macOS entries walked are exactly `expected`, in any order (chmod +a puts deny entries first). */
export function sameDarwinEntries(walked: readonly DarwinAce[] | undefined, expected: readonly DarwinAce[]): boolean {
  return JSON.stringify((walked ?? []).map(darwinKey).sort()) === JSON.stringify(expected.map(darwinKey).sort());
}

/**
 * Whether `aces` hold each of `expected` (the trivial owner@, group@ and everyone@ entries a
 * file system keeps besides are not compared; SYNCHRONIZE, which ZFS may add, is not either).
 */
export function holdsNfs4Entries(aces: readonly Nfs4Ace[], expected: readonly Nfs4Ace[]): boolean {
  const key = (a: Nfs4Ace) => `${a.type}:${a.flag}:${a.mask & ~RFC_ACCESS.SYNCHRONIZE}:${a.who}:${a.uid ?? ''}:${a.gid ?? ''}`;
  const read = new Set(aces.map(key));
  return expected.every((e) => read.has(key(e)));
}

/** Runs `command` with `args` and says whether it succeeded (the proof sets ACLs with the system's own tools). */
function ran(command: string, ...args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/**
 * The ACLs the proof gives its scratch folder with the system's own means, in
 * order, so the reader's calls on ACLs with entries run too, each to be read
 * back by path and by descriptor. Each platform has a positive control (entries
 * that grant, which must be seen as set) and a negative one (entries that only
 * deny, which must be seen and must not grant), of two entries or more, so a
 * wrong tag, type, permission, flag, first-entry or next-entry constant fails
 * here rather than hide every real entry. Linux, through lsetxattr (the one call only
 * the proof makes): named user and group entries writing through an rwx mask,
 * the same entries under an r-x mask, then a default ACL, which a folder read by
 * descriptor must show. macOS, chmod +a: two allow entries (one inheritable) and
 * a deny entry, then, the ACL removed, two deny entries alone. FreeBSD, setfacl:
 * on NFSv4 ACLs (ZFS) the same shape with user and group entries for nobody; on
 * POSIX.1e ACLs (UFS mounted with acls) named entries, then none.
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
    const add = (entries: ReadonlyArray<{ text: string }>) => entries.every(({ text }) => ran('/bin/chmod', '+a', text, dir));
    const { granting, denying } = DARWIN_PROOF_ENTRIES;
    return [
      {
        what: 'two allow entries and a deny entry (chmod +a)',
        set: () => add(granting),
        // Any allow entry is distrusted; every entry must have been walked, with its tag, permissions and flags.
        expected: (acl) =>
          acl.kind === 'distrusted' &&
          sameDarwinEntries(
            acl.walked,
            granting.map((e) => e.ace),
          ),
      },
      {
        what: 'deny entries alone (chmod +a)',
        set: () => ran('/bin/chmod', '-N', dir) && add(denying),
        // Deny entries grant nothing: no ACL to distrust, and both were walked.
        expected: (acl) =>
          acl.kind === 'none' &&
          sameDarwinEntries(
            acl.walked,
            denying.map((e) => e.ace),
          ),
      },
    ];
  }
  if (process.platform === 'freebsd') {
    const add = (entries: ReadonlyArray<{ text: string }>) => ran('/bin/setfacl', '-a', '0', entries.map((e) => e.text).join(','), dir);
    const { granting, denying } = FREEBSD_PROOF_ENTRIES;
    const nfs4 = (acl: DirectoryAcl, expected: ReadonlyArray<{ ace: Nfs4Ace }>, mayGrant: boolean) =>
      acl.kind === 'nfs4' &&
      holdsNfs4Entries(
        acl.aces,
        expected.map((e) => e.ace),
      ) &&
      (mayGrant || !acl.aces.some((a) => a.type === NFS4_ACE_TYPE.ALLOW && (a.uid !== undefined || a.gid !== undefined)));
    return [
      {
        what: 'NFSv4 allow entries and a deny entry (setfacl -a)',
        set: () => add(granting),
        expected: (acl) => nfs4(acl, granting, true),
      },
      {
        what: 'NFSv4 deny entries alone (setfacl -a)',
        set: () => ran('/bin/setfacl', '-b', dir) && add(denying),
        expected: (acl) => nfs4(acl, denying, false),
      },
    ];
  }
  return [];
}

/** FreeBSD's controls where the file system keeps POSIX.1e ACLs (UFS mounted with acls) rather than NFSv4 ones: named entries are distrusted, none are not. */
function freebsdPosixControls(dir: string): ProofControl[] {
  return [
    {
      what: 'POSIX.1e named entries (setfacl -m)',
      set: () => ran('/bin/setfacl', '-m', `u:${FREEBSD_NOBODY}:rwx,g:${FREEBSD_NOBODY}:rwx`, dir),
      expected: (acl) => acl.kind === 'distrusted' && acl.errno === undefined,
    },
    { what: 'those entries removed (setfacl -b)', set: () => ran('/bin/setfacl', '-b', dir), expected: (acl) => acl.kind === 'none' },
  ];
}

/**
 * In the proving child (`symbi route-proof acl`): builds the reader and runs
 * each of its calls on a private scratch directory under the temporary
 * directory: a path through a regular file, which must fail with ENOTDIR, so
 * errno is known to be read from the call that set it; the same for a closed
 * descriptor, which must fail with EBADF; the directory as created (any answer
 * but a failed call passes); then the controls (scratchControls), each read back
 * by path and by descriptor. On macOS and FreeBSD a file system that says it has
 * no ACLs (pathconf) must read as such, and one that says it has them must take
 * every control. The scratch folder's entries are removed before the folder.
 * Says how it went, with the number of controls that ran.
 */
export function proveAclReaderHere(): { ok: true; controls: number } | { ok: false; reason: string } {
  let koffi: typeof Koffi;
  let reader: AclReader;
  try {
    koffi = loadKoffi();
    reader = createReader(koffi, process.platform);
  } catch (err) {
    return { ok: false, reason: `cannot be used: ${(err as Error).message}` };
  }
  // The parent reads the first 300 characters of the answer's line: the detail is kept short enough for the line to stay JSON.
  const failed = (check: string, detail: string) => ({ ok: false as const, reason: `failed its self-test: ${check}: ${detail.slice(0, 160)}` });
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
    // macOS and FreeBSD say whether the file system has ACLs (pathconf): where it has none, the reader must say so
    // (never "no ACL"), and no control can be set; where it has them, every control must be set and read back.
    const asked = process.platform === 'darwin' || process.platform === 'freebsd';
    if (asked && (fresh.kind === 'unreadable') !== (freshFd.kind === 'unreadable')) {
      return failed('a directory read by path and by descriptor is on the same file system', `read as ${readText(fresh)} and ${readText(freshFd)}`);
    }
    if (asked && fresh.kind === 'unreadable') return { ok: true, controls: 0 };
    const freebsdPosix = process.platform === 'freebsd' && fresh.kind !== 'nfs4';
    let controls = 0;
    for (const control of freebsdPosix ? freebsdPosixControls(root) : scratchControls(koffi, root)) {
      if (!control.set()) {
        if (asked) return failed(`a directory on a file system that says it has ACLs can be given ${control.what}`, 'the system tool refused');
        // Linux: a file system that refuses the first ACL has none to read back: what was proven above stands.
        break;
      }
      const byPath = reader.byPath(root);
      if (!control.expected(byPath, 'path')) return failed(`a directory given ${control.what} reads as set`, `read as ${readText(byPath)}`);
      const byFd = byDescriptor();
      if (!control.expected(byFd, 'descriptor')) return failed(`a directory given ${control.what} reads as set by descriptor`, `read as ${readText(byFd)}`);
      controls++;
    }
    return { ok: true, controls };
  } finally {
    // Plain unlink and rmdir: a recursive removal may call libc's fdopendir, which this child is not here to prove.
    // Whatever entries the folder holds go first (a deny entry can forbid deleting it): chmod -N, setfacl -b.
    if (process.platform === 'darwin') ran('/bin/chmod', '-N', root);
    if (process.platform === 'freebsd') ran('/bin/setfacl', '-b', root);
    try {
      fs.unlinkSync(path.join(root, 'file'));
      fs.rmdirSync(root);
    } catch {
      // Best effort: a scratch folder left in the temporary directory costs only its space.
    }
  }
}

import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import type Koffi from 'koffi';
import { errnoError, type DescriptorRoute, type DirectoryListing } from './descriptor-route.js';
import { F_GETFD, F_GETFL, openFlags, type OverridableConstant } from './open-flags.js';

// The routes that call the process's own libc through koffi (a C FFI that ships
// prebuilt binaries, so nothing is compiled on the user's machine), the way a C
// program would: openat, mkdirat, renameat, linkat, unlinkat, and fdopendir/readdir to
// list a directory from its descriptor. koffi.load(null) is the running
// process's own C library on Linux, macOS and FreeBSD.
//
// What differs per platform, from each system's headers:
// - struct dirent: only d_reclen (offset 16 everywhere) and where d_name starts
//   are read. glibc/musl: ino, off, reclen, type, name (19). macOS with 64-bit
//   inodes (sys/dirent.h __DARWIN_STRUCT_DIRENTRY): ino, seekoff, reclen,
//   namlen, type, name (21). FreeBSD 12+ (sys/dirent.h): fileno, off, reclen,
//   type, pad0, namlen, pad1, name (24).
// - macOS x64 keeps the 32-bit-inode dirent under the plain names; the 64-bit
//   ones are fdopendir$INODE64 and readdir$INODE64 (arm64 has only those, unsuffixed).
// - mode_t is 32 bits on Linux, 16 on macOS and FreeBSD. openat's mode is a
//   variadic argument, so it is declared as variadic (Apple arm64 passes those
//   on the stack, not in registers) and promoted to int, as C would.
// - Linux openat2 (5.6+) is system call 437 on every architecture
//   (include/uapi/asm-generic/unistd.h); its struct open_how is three u64
//   (flags, mode, resolve), and RESOLVE_NO_SYMLINKS = 0x04, RESOLVE_BENEATH =
//   0x08 (include/uapi/linux/openat2.h).
// - Linux O_TMPFILE (3.11+) is __O_TMPFILE 020000000 | O_DIRECTORY on every
//   architecture listed above (include/uapi/asm-generic/fcntl.h). Such a file is
//   named with linkat(AT_FDCWD, "/proc/self/fd/<fd>", dirfd, name,
//   AT_SYMLINK_FOLLOW), which needs no privilege (AT_EMPTY_PATH would need
//   CAP_DAC_READ_SEARCH) and, like every link, fails with EEXIST when the name
//   exists, symlinks included (linkat(2)); AT_FDCWD = -100 and AT_SYMLINK_FOLLOW =
//   0x400 (include/uapi/linux/fcntl.h).

const SYS_OPENAT2 = 437;
const RESOLVE_NO_SYMLINKS = 0x04;
const RESOLVE_BENEATH = 0x08;
const OPEN_HOW_BYTES = 24;
const O_TMPFILE_WITHOUT_DIRECTORY = 0o20000000;
const AT_FDCWD = -100;
const AT_SYMLINK_FOLLOW = 0x400;
const DIRENT_RECLEN_OFFSET = 16;

// Each readdir record is checked before its name is copied: d_reclen must hold
// the name's offset and at least a NUL, and no more than the platform's whole
// struct dirent (glibc and musl 280 bytes: d_name[256]; macOS 1048: d_name[1024];
// FreeBSD 280: d_name[MAXNAMLEN + 1]); the name must end with a NUL inside the
// record; and where the record carries d_namlen (macOS at offset 18, FreeBSD at
// 20, both uint16), it must equal the length found. A record that fails is
// refused as EIO rather than read past.

interface PlatformLayout {
  direntNameOffset: number;
  /** Offset of d_namlen (uint16), where the platform has it. */
  direntNamlenOffset?: number;
  /** sizeof(struct dirent): the largest record readdir can return. */
  direntMaxRecord: number;
  fdopendir: string;
  readdir: string;
  modeType: 'uint32_t' | 'uint16_t';
}

function platformLayout(platform: string, arch: string): PlatformLayout | string {
  if (!['x64', 'arm64', 'riscv64', 'ppc64', 'loong64', 's390x'].includes(arch)) return `no dirent layout is known for 32-bit ${arch}`;
  switch (platform) {
    case 'linux':
      return { direntNameOffset: 19, direntMaxRecord: 280, fdopendir: 'fdopendir', readdir: 'readdir', modeType: 'uint32_t' };
    case 'darwin': {
      const dirent = { direntNameOffset: 21, direntNamlenOffset: 18, direntMaxRecord: 1048, modeType: 'uint16_t' } as const;
      return arch === 'x64'
        ? { ...dirent, fdopendir: 'fdopendir$INODE64', readdir: 'readdir$INODE64' }
        : { ...dirent, fdopendir: 'fdopendir', readdir: 'readdir' };
    }
    case 'freebsd':
      return { direntNameOffset: 24, direntNamlenOffset: 20, direntMaxRecord: 280, fdopendir: 'fdopendir', readdir: 'readdir', modeType: 'uint16_t' };
    default:
      return `no dirent layout is known for ${platform}`;
  }
}

/** A readdir record that fails its bounds check: refused as EIO, never read past. */
function recordError(detail: string): NodeJS.ErrnoException {
  const err = errnoError(os.constants.errno.EIO, 'readdir');
  err.message = `EIO: readdir returned a record out of bounds (${detail})`;
  return err;
}

// koffi prepares one variadic call per thread and keeps it while calls repeat
// the same function with the same argument types; a different call frees it,
// after the C function returns but before koffi.errno() can be read, and free()
// may change errno. So each variadic function here is called in one shape only,
// and when the last variadic call in this thread was a different function, a
// call of the same shape that cannot do anything (descriptor -1) goes first:
// the real call then finds its shape prepared and its errno survives. Module
// state is per thread, like koffi's own slot.
let lastVariadic: string | undefined;

function primeVariadic(name: string, prime: () => unknown): void {
  if (lastVariadic === name) return;
  prime();
  lastVariadic = name;
}

let fcntlFunction: ReturnType<ReturnType<typeof Koffi.load>['func']> | undefined;

/**
 * fcntl(fd, F_GETFD, 0) and fcntl(fd, F_GETFL, 0) through libc, the third
 * argument always passed; -1 throws the errno error instead of passing as a
 * word with every flag set.
 */
export function descriptorFlagsThroughLibc(fd: number): { fdFlags: number; statusFlags: number } {
  const koffi = loadKoffi();
  const fcntl = (fcntlFunction ??= koffi.load(null).func('int fcntl(int, int, ...)'));
  const call = (command: number, label: string): number => {
    primeVariadic('fcntl', () => fcntl(-1, command, 'int', 0));
    const result = fcntl(fd, command, 'int', 0) as number;
    if (result === -1) throw errnoError(koffi.errno(), `fcntl(${label})`);
    return result;
  };
  return { fdFlags: call(F_GETFD, 'F_GETFD'), statusFlags: call(F_GETFL, 'F_GETFL') };
}

let koffiModule: typeof Koffi | undefined;

/** Loads koffi on first use, so a platform without its prebuilt binary only loses these routes. */
export function loadKoffi(): typeof Koffi {
  koffiModule ??= createRequire(import.meta.url)('koffi') as typeof Koffi;
  return koffiModule;
}

export interface LibcRouteOptions {
  /** Open multi-component paths with one openat2 call (Linux only). */
  openat2: boolean;
  platform?: string;
  arch?: string;
  overrides?: Partial<Record<OverridableConstant, number>>;
}

/** Builds a libc route; throws an Error whose message says why it cannot exist here (missing library, symbol or layout). */
export function createLibcRoute(options: LibcRouteOptions): DescriptorRoute {
  const platform = options.platform ?? process.platform;
  const layout = platformLayout(platform, options.arch ?? process.arch);
  if (typeof layout === 'string') throw new Error(layout);
  if (options.openat2 && platform !== 'linux') throw new Error('openat2 is a Linux system call');
  const flags = openFlags(platform, options.overrides);
  if (flags.O_CLOEXEC === 0 && options.overrides?.O_CLOEXEC === undefined) throw new Error(`O_CLOEXEC is not known for ${platform}`);
  const nameOffset = options.overrides?.DIRENT_NAME_OFFSET ?? layout.direntNameOffset;
  const reclenOffset = options.overrides?.DIRENT_RECLEN_OFFSET ?? DIRENT_RECLEN_OFFSET;
  const namlenOffset = options.overrides?.DIRENT_NAMLEN_OFFSET ?? layout.direntNamlenOffset;
  const koffi = loadKoffi();
  const libc = koffi.load(null);
  const openat = libc.func('int openat(int, const char *, int, ...)');
  const mkdirat = libc.func(`int mkdirat(int, const char *, ${layout.modeType})`);
  const renameat = libc.func('int renameat(int, const char *, int, const char *)');
  const unlinkat = libc.func('int unlinkat(int, const char *, int)');
  const fdopendirFn = libc.func(layout.fdopendir, 'void *', ['int']);
  const readdirFn = libc.func(layout.readdir, 'void *', ['void *']);
  const closedir = libc.func('int closedir(void *)');
  const syscall = options.openat2 ? libc.func('long syscall(long, ...)') : undefined;
  const linkat = libc.func('int linkat(int, const char *, int, const char *, int)');
  const cloexec = flags.O_CLOEXEC;
  const directoryFlags = flags.O_RDONLY | flags.O_DIRECTORY | cloexec;

  const check = (result: unknown, call: string): number => {
    const n = Number(result);
    if (n < 0) throw errnoError(koffi.errno(), call);
    return n;
  };
  // openat in its one call shape: the mode is always passed (0 when nothing is created);
  // check() reads errno right after the call that set it, before anything else runs.
  const openatCall = (dirFd: number, name: string, flagsValue: number, mode: number, call = 'openat'): number => {
    primeVariadic('openat', () => openat(-1, '', 0, 'int', 0));
    return check(openat(dirFd, name, flagsValue, 'int', mode), call);
  };

  const route: DescriptorRoute = {
    flags,
    name: options.openat2 ? 'openat2' : 'libc',
    description: options.openat2
      ? 'openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) for whole paths, libc openat otherwise (through koffi)'
      : 'libc openat, one component at a time with O_NOFOLLOW (through koffi)',
    openAt(dirFd, name, openFlagsValue, mode) {
      // The mode travels as a variadic int (default argument promotion).
      return openatCall(dirFd, name, openFlagsValue | cloexec, mode ?? 0);
    },
    mkdirAt(dirFd, name, mode) {
      check(mkdirat(dirFd, name, mode), 'mkdirat');
    },
    renameAt(dirFd, from, to) {
      check(renameat(dirFd, from, dirFd, to), 'renameat');
    },
    linkAt(dirFd, from, to) {
      // Flags 0: a symlink at `from` is linked itself, never followed (linkat(2), POSIX).
      check(linkat(dirFd, from, dirFd, to, 0), 'linkat');
    },
    unlinkAt(dirFd, name) {
      check(unlinkat(dirFd, name, 0), 'unlinkat');
    },
    list(dirFd, max): DirectoryListing {
      // fdopendir takes over the descriptor it is given, so it gets its own,
      // opened as "." from dirFd, with a read offset of its own too.
      const own = openatCall(dirFd, '.', directoryFlags, 0);
      const dir = fdopendirFn(own) as bigint | null;
      if (dir === null) {
        const err = errnoError(koffi.errno(), 'fdopendir');
        fs.closeSync(own);
        throw err;
      }
      const names: Buffer[] = [];
      try {
        for (;;) {
          koffi.errno(0);
          const entry = readdirFn(dir) as bigint | null;
          if (entry === null) {
            const errno = koffi.errno();
            if (errno !== 0) throw errnoError(errno, 'readdir');
            return { names, truncated: false };
          }
          // The record is valid only until the next readdir: check its bounds, then copy the name out of it.
          const reclen = koffi.decode(entry, reclenOffset, 'uint16_t') as number;
          if (reclen <= nameOffset || reclen > layout.direntMaxRecord) {
            throw recordError(`d_reclen ${reclen} is outside ${nameOffset + 1}..${layout.direntMaxRecord}`);
          }
          const record = new Uint8Array(koffi.view(entry, reclen));
          const end = record.indexOf(0, nameOffset);
          if (end < 0) throw recordError(`the name has no NUL within d_reclen ${reclen}`);
          if (namlenOffset !== undefined) {
            const namlen = koffi.decode(entry, namlenOffset, 'uint16_t') as number;
            if (namlen !== end - nameOffset) throw recordError(`d_namlen ${namlen} differs from the name's ${end - nameOffset} bytes`);
          }
          const name = record.subarray(nameOffset, end);
          if ((name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)) continue;
          if (names.length >= max) return { names, truncated: true };
          names.push(Buffer.from(name));
        }
      } finally {
        closedir(dir);
      }
    },
  };
  if (platform === 'linux') {
    const unnamedFlags = O_TMPFILE_WITHOUT_DIRECTORY | flags.O_DIRECTORY | flags.O_WRONLY | flags.O_APPEND | cloexec;
    route.openUnnamedFile = (dirFd, mode) => openatCall(dirFd, '.', unnamedFlags, mode, 'openat(O_TMPFILE)');
    route.nameUnnamedFile = (fd, dirFd, name) => {
      check(linkat(AT_FDCWD, `/proc/self/fd/${fd}`, dirFd, name, AT_SYMLINK_FOLLOW), 'linkat');
    };
  }
  if (syscall !== undefined) {
    const littleEndian = os.endianness() === 'LE';
    route.openBeneath = (dirFd, components, openFlagsValue) => {
      const how = Buffer.alloc(OPEN_HOW_BYTES);
      const write = (value: number, at: number): number => (littleEndian ? how.writeBigUInt64LE(BigInt(value), at) : how.writeBigUInt64BE(BigInt(value), at));
      write(openFlagsValue | cloexec, 0);
      write(0, 8);
      write(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, 16);
      primeVariadic('openat2', () => syscall(SYS_OPENAT2, 'long', -1, 'const char *', '', 'void *', null, 'size_t', 0));
      return check(syscall(SYS_OPENAT2, 'long', dirFd, 'const char *', components.join('/'), 'void *', how, 'size_t', OPEN_HOW_BYTES), 'openat2');
    };
  }
  return route;
}

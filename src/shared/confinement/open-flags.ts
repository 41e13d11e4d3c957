import fs from 'node:fs';
import { isRecord } from '../json-value.js';
import { TEST_SWITCHES_HONOURED } from '../test-switches.js';

// The open(2) flags every confinement route uses. Node.js builds fs.constants
// from the platform's own headers, so those values are taken from there (on
// Linux arm64 O_DIRECTORY and O_NOFOLLOW differ from x64). O_CLOEXEC is not in
// fs.constants: Node.js adds it to its own opens, but a descriptor opened
// through libc needs it spelled out, with the value from each kernel's header:
//   Linux   include/uapi/asm-generic/fcntl.h  O_CLOEXEC 02000000 (x64 and arm64 alike)
//   macOS   xnu bsd/sys/fcntl.h               O_CLOEXEC 0x01000000
//   FreeBSD sys/sys/fcntl.h                   O_CLOEXEC 0x00100000
// F_GETFD = 1, F_GETFL = 3 and FD_CLOEXEC = 1 are the same in all three headers.
// Linux O_PATH is not in fs.constants either: 010000000 in the same header, on
// every architecture libc-route.ts supports; fstat takes such a descriptor
// since Linux 3.6, below the 4.18 Node.js 20 needs (its BUILDING.md).

const O_PATH_LINUX = 0o10000000;

const O_CLOEXEC_BY_PLATFORM: Readonly<Record<string, number>> = {
  linux: 0o2000000,
  darwin: 0x01000000,
  freebsd: 0x00100000,
};

export const F_GETFD = 1;
export const F_GETFL = 3;
export const FD_CLOEXEC = 1;

export interface OpenFlags {
  readonly O_RDONLY: number;
  readonly O_WRONLY: number;
  readonly O_RDWR: number;
  readonly O_ACCMODE: number;
  readonly O_CREAT: number;
  readonly O_EXCL: number;
  readonly O_APPEND: number;
  readonly O_DIRECTORY: number;
  readonly O_NOFOLLOW: number;
  readonly O_NONBLOCK: number;
  /** 0 where this platform's value is unknown; the self-test then refuses the libc routes. */
  readonly O_CLOEXEC: number;
  /** Linux O_PATH: a descriptor that needs only search permission on the directory it names; 0 elsewhere. */
  readonly O_PATH: number;
}

/**
 * Test-only: SYMBI_CONFINEMENT_TEST_CONSTANTS, a JSON object of flag names to
 * numbers, replaces those values so a test can show that the startup self-test
 * refuses a route built on wrong constants. Read here and nowhere else.
 */
export const TEST_CONSTANTS_ENV = 'SYMBI_CONFINEMENT_TEST_CONSTANTS';

/**
 * Keys the test-only override may replace: the flags above, the struct dirent
 * offsets (libc-route.ts: where the name, d_reclen and d_namlen are read; a
 * d_namlen offset on Linux, which has none, makes one up), and how long a
 * route's proof in a child process may take (route-proof.ts).
 */
const OVERRIDABLE_CONSTANTS = [
  'O_DIRECTORY',
  'O_NOFOLLOW',
  'O_NONBLOCK',
  'O_CLOEXEC',
  'DIRENT_NAME_OFFSET',
  'DIRENT_RECLEN_OFFSET',
  'DIRENT_NAMLEN_OFFSET',
  'PROOF_DEADLINE_MS',
] as const;
export type OverridableConstant = (typeof OVERRIDABLE_CONSTANTS)[number];

/** The test-only constant overrides from the environment (empty in production). Throws on a malformed value. */
export function testConstantOverrides(env: NodeJS.ProcessEnv = process.env): Partial<Record<OverridableConstant, number>> {
  const raw = env[TEST_CONSTANTS_ENV];
  // The shipped bundle never honours it (test-switches.ts; its command line refuses it at startup).
  if (raw === undefined || raw === '' || !TEST_SWITCHES_HONOURED) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`${TEST_CONSTANTS_ENV} is not JSON; expected an object such as {"O_NOFOLLOW":0}`);
  }
  if (!isRecord(parsed)) throw new Error(`${TEST_CONSTANTS_ENV} must be a JSON object`);
  const out: Partial<Record<OverridableConstant, number>> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(OVERRIDABLE_CONSTANTS as readonly string[]).includes(key) || !Number.isInteger(value)) {
      throw new Error(`${TEST_CONSTANTS_ENV}: ${key} is not one of ${OVERRIDABLE_CONSTANTS.join(', ')} with an integer value`);
    }
    out[key as OverridableConstant] = value as number;
  }
  return out;
}

/** The flags for `platform`, from fs.constants plus O_CLOEXEC, with any test-only overrides applied. */
export function openFlags(platform: string = process.platform, overrides: Partial<Record<OverridableConstant, number>> = {}): OpenFlags {
  const c = fs.constants;
  return {
    O_RDONLY: c.O_RDONLY,
    O_WRONLY: c.O_WRONLY,
    O_RDWR: c.O_RDWR,
    O_ACCMODE: c.O_RDONLY | c.O_WRONLY | c.O_RDWR,
    O_CREAT: c.O_CREAT,
    O_EXCL: c.O_EXCL,
    O_APPEND: c.O_APPEND,
    O_DIRECTORY: overrides.O_DIRECTORY ?? c.O_DIRECTORY,
    O_NOFOLLOW: overrides.O_NOFOLLOW ?? c.O_NOFOLLOW,
    O_NONBLOCK: overrides.O_NONBLOCK ?? c.O_NONBLOCK,
    O_CLOEXEC: overrides.O_CLOEXEC ?? O_CLOEXEC_BY_PLATFORM[platform] ?? 0,
    O_PATH: platform === 'linux' ? O_PATH_LINUX : 0,
  };
}

import crypto from 'node:crypto';
import fs from 'node:fs';
import { type DescriptorRoute, entryIdentityAt, fileFlags, hardLinkProblem } from '../confinement/index.js';
import { privateModeProblem, UnsafeStorageError } from './private-directory.js';
import { trustedWritersProblem } from './directory-ownership.js';
import { ED25519_SEED_BYTES, signingKeyFromSeed, type ProjectSigningKey } from '../signing/signing-key.js';
import { describeStorageFailure } from './storage-failure.js';
import { sha256Hex } from '../canonical-json.js';

// audit-signing.key holds the raw Ed25519 seed. Whoever can read it can forge
// the project's journals, and whoever can swap it can make forged journals
// verify with "the project key", so it must be a private, single-link, regular
// file of exactly 32 bytes. A bad key is refused, never silently replaced:
// replacing it would orphan every journal signed so far.

/** What the key file was at startup: which file, how big, its permission bits, and its content. */
export interface KeyFileIdentity {
  dev: number;
  ino: number;
  size: number;
  mode: number;
  sha256: string;
}

export interface PinnedSigningKey {
  key: ProjectSigningKey;
  /**
   * The raw 32-byte seed. A KeyObject cannot cross a thread boundary, so this
   * is what the worker threads receive (once, in their boot data); each builds
   * its own KeyObject from it and wipes its copy.
   */
  seed: Uint8Array;
  file: KeyFileIdentity;
  /** The key file's absolute path, for messages. */
  shownPath: string;
  /** True when this process created the file (a project's first start); `symbi check` reports it. */
  created?: boolean;
}

const SIGNING_KEY_FILE = 'audit-signing.key';
const KEY_FILE_MODE = 0o600;

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

// A new key is written whole under a name of its own, made durable, and only
// then linked to audit-signing.key: link(2) fails with EEXIST when the name
// exists, so of several servers started at once in a fresh project exactly one
// key gets the name, each loser loads the winner's key, and no reader ever sees
// a key file shorter than a seed. The link leaves the file with two names until
// its creator removes the temporary one; readKeyFile accepts that second name
// (and only that one), and a start removes any left by a crash. A temporary
// name is never read as the key.
const NEW_KEY_PREFIX = `${SIGNING_KEY_FILE}.new-`;
/** Enough for any governed/ folder the journal listing accepts; the names sought sit among journals. */
const NEW_KEY_LISTING_MAX = 1_000_000;

function newKeyName(): string {
  return `${NEW_KEY_PREFIX}${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
}

function syncDirectory(dirFd: number): void {
  try {
    fs.fsyncSync(dirFd);
  } catch {
    // Some file systems refuse fsync on a directory; the key file itself is synced.
  }
}

function unlinkQuietly(route: DescriptorRoute, dirFd: number, name: string): boolean {
  try {
    route.unlinkAt(dirFd, name);
    return true;
  } catch (err) {
    return errno(err) === 'ENOENT';
  }
}

/**
 * Writes a new random key under a temporary name and links it to audit-signing.key.
 * Returns true when this call's key got the name, false when another key already had it.
 */
function createKeyFile(route: DescriptorRoute, dirFd: number, shown: string): boolean {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = route.flags;
  const temporary = newKeyName();
  let fd: number;
  try {
    fd = route.openAt(dirFd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, KEY_FILE_MODE);
  } catch (err) {
    throw new UnsafeStorageError(`${shown}: cannot create the signing key: ${describeStorageFailure(err)}`);
  }
  try {
    fs.fchmodSync(fd, KEY_FILE_MODE);
    const seed = crypto.randomBytes(ED25519_SEED_BYTES);
    let written = 0;
    while (written < seed.length) written += fs.writeSync(fd, seed, written, seed.length - written);
    seed.fill(0);
    fs.fsyncSync(fd); // the content is durable before any name can lead to it
  } catch (err) {
    const removed = unlinkQuietly(route, dirFd, temporary);
    throw new UnsafeStorageError(
      `${shown}: cannot write the new signing key: ${describeStorageFailure(err)}${removed ? '' : `; the partial file ${temporary} could not be removed`}`,
    );
  } finally {
    fs.closeSync(fd);
  }
  syncDirectory(dirFd);
  let won: boolean;
  try {
    route.linkAt(dirFd, temporary, SIGNING_KEY_FILE);
    won = true;
  } catch (err) {
    // EEXIST: another server's key (or a symlink, refused when read) has the name.
    // ENOENT: a server that already holds the key removed this temporary file as a leftover.
    if (errno(err) !== 'EEXIST' && errno(err) !== 'ENOENT') {
      unlinkQuietly(route, dirFd, temporary);
      throw new UnsafeStorageError(`${shown}: cannot name the new signing key: ${describeStorageFailure(err)}`);
    }
    won = false;
  }
  unlinkQuietly(route, dirFd, temporary);
  syncDirectory(dirFd); // the key's name, and the temporary name gone
  return won;
}

/** The temporary names of new keys in `dirFd` (this process's, other servers', or a crash's leftovers). */
function newKeyNames(route: DescriptorRoute, dirFd: number): string[] {
  return route
    .list(dirFd, NEW_KEY_LISTING_MAX)
    .names.map((raw) => raw.toString('utf8'))
    .filter((name) => name.startsWith(NEW_KEY_PREFIX));
}

/**
 * True when the key file open as `fd`, seen with two links, is mid-creation: its other
 * name is a new key's temporary name (or its creator has removed that name since).
 */
function isBeingNamed(route: DescriptorRoute, dirFd: number, fd: number, stat: fs.Stats): boolean {
  if (stat.nlink !== 2) return false;
  for (const name of newKeyNames(route, dirFd)) {
    const identity = entryIdentityAt(route, dirFd, name);
    if (identity !== undefined && identity.dev === stat.dev && identity.ino === stat.ino) return true;
  }
  // The creator may have removed its temporary name while the folder was listed.
  return fs.fstatSync(fd).nlink === 1;
}

/** Removes the temporary names new keys left behind (a crashed start, or servers that lost the race). */
function removeNewKeyLeftovers(route: DescriptorRoute, dirFd: number): void {
  let removed = false;
  try {
    for (const name of newKeyNames(route, dirFd)) removed = unlinkQuietly(route, dirFd, name) || removed;
  } catch {
    // A leftover is never read as the key; failing to list or remove one only costs space.
  }
  if (removed) syncDirectory(dirFd);
}

interface KeyFileRead {
  seed: Buffer;
  identity: KeyFileIdentity;
}

function identityOf(stat: fs.Stats, seed: Uint8Array): KeyFileIdentity {
  return {
    dev: stat.dev,
    ino: stat.ino,
    size: stat.size,
    mode: stat.mode & 0o7777,
    sha256: sha256Hex(seed),
  };
}

/**
 * Opens, checks and reads the key file; undefined when it does not exist. Throws UnsafeStorageError.
 * `checkWriters` (at startup, where the ACL reader may load) adds the writer check of directory-ownership.ts.
 */
export function readKeyFile(route: DescriptorRoute, dirFd: number, shown: string, checkWriters = false): KeyFileRead | undefined {
  let fd: number;
  try {
    fd = route.openAt(dirFd, SIGNING_KEY_FILE, fileFlags(route));
  } catch (err) {
    const code = errno(err);
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP' || code === 'EMLINK') throw new UnsafeStorageError(`${shown}: unsafe signing key: is a symlink`);
    if (code === 'ENXIO') throw new UnsafeStorageError(`${shown}: unsafe signing key: not a regular file`);
    throw new UnsafeStorageError(`${shown}: cannot open the signing key (${code})`);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new UnsafeStorageError(`${shown}: unsafe signing key: not a regular file`);
    const uid = process.getuid?.();
    if (uid !== undefined && stat.uid !== uid) {
      throw new UnsafeStorageError(`${shown}: unsafe signing key: owned by uid ${stat.uid}, not by the server's uid ${uid}`);
    }
    const linked = hardLinkProblem(stat);
    if (linked !== undefined && !isBeingNamed(route, dirFd, fd, stat)) throw new UnsafeStorageError(`${shown}: unsafe signing key: ${linked}`);
    const modeProblem = privateModeProblem(stat.mode, KEY_FILE_MODE);
    if (modeProblem !== undefined) throw new UnsafeStorageError(`${shown}: unsafe signing key: ${modeProblem}`);
    const writers = checkWriters ? trustedWritersProblem(fd, shown, stat) : undefined;
    if (writers !== undefined) throw new UnsafeStorageError(`${shown}: unsafe signing key: ${writers}`);
    // Read one byte more than a seed so an oversized file is noticed even if it grew after fstat.
    const buffer = Buffer.alloc(ED25519_SEED_BYTES + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const n = fs.readSync(fd, buffer, filled, buffer.length - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    if (stat.size !== ED25519_SEED_BYTES || filled !== ED25519_SEED_BYTES) {
      const size = Math.max(stat.size, filled);
      throw new UnsafeStorageError(`${shown}: invalid signing key: is ${size} bytes; expected exactly ${ED25519_SEED_BYTES} raw bytes (an Ed25519 seed)`);
    }
    const seed = buffer.subarray(0, ED25519_SEED_BYTES);
    return { seed, identity: identityOf(stat, seed) };
  } catch (err) {
    if (err instanceof UnsafeStorageError) throw err;
    throw new UnsafeStorageError(`${shown}: cannot read the signing key (${errno(err)})`);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Loads audit-signing.key from the private directory `dirFd`, creating it
 * exclusively with a random seed when absent (unless `create` is false, in
 * which case a missing key yields undefined). Throws UnsafeStorageError.
 */
export function loadSigningKeyFile(route: DescriptorRoute, dirFd: number, shownDir: string, options: { create: boolean }): ProjectSigningKey | undefined {
  const loaded = options.create ? pinSigningKeyFile(route, dirFd, shownDir) : readAndBuild(route, dirFd, `${shownDir}/${SIGNING_KEY_FILE}`);
  if (loaded === undefined) return undefined;
  loaded.seed.fill(0);
  return loaded.key;
}

/**
 * Startup only: loads (creating when absent) the key this process will sign
 * with for its whole life, with the file's identity so later changes to the
 * file can be noticed (signing-key-change.ts). The caller owns `seed`.
 */
export function pinSigningKeyFile(route: DescriptorRoute, dirFd: number, shownDir: string): PinnedSigningKey {
  const shown = `${shownDir}/${SIGNING_KEY_FILE}`;
  let pinned = readAndBuild(route, dirFd, shown);
  let created: boolean | undefined;
  if (pinned === undefined) {
    created = createKeyFile(route, dirFd, shown);
    pinned = readAndBuild(route, dirFd, shown);
    if (pinned === undefined) throw new UnsafeStorageError(`${shown}: the signing key vanished right after it was created`);
  }
  removeNewKeyLeftovers(route, dirFd);
  return created === undefined ? pinned : { ...pinned, created };
}

function readAndBuild(route: DescriptorRoute, dirFd: number, shown: string): PinnedSigningKey | undefined {
  const read = readKeyFile(route, dirFd, shown, true);
  if (read === undefined) return undefined;
  return { key: signingKeyFromSeed(read.seed), seed: read.seed, file: read.identity, shownPath: shown };
}

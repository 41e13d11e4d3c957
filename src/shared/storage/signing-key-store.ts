import crypto from 'node:crypto';
import fs from 'node:fs';
import { type DescriptorRoute, entryIdentityAt, fileFlags, hardLinkProblem } from '../confinement/index.js';
import { UnsafeStorageError } from './private-directory.js';
import { ED25519_SEED_BYTES, signingKeyFromSeed, type ProjectSigningKey } from '../signing/signing-key.js';
import { describeStorageFailure } from './storage-failure.js';

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

export const SIGNING_KEY_FILE = 'audit-signing.key';
const KEY_FILE_MODE = 0o600;

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

function createKeyFile(route: DescriptorRoute, dirFd: number, shown: string): boolean {
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = route.flags;
  let fd: number;
  try {
    fd = route.openAt(dirFd, SIGNING_KEY_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, KEY_FILE_MODE);
  } catch (err) {
    // Another process created it first (or a symlink sits there): load and check what is there.
    if (errno(err) === 'EEXIST' || errno(err) === 'ELOOP' || errno(err) === 'EMLINK') return false;
    throw new UnsafeStorageError(`${shown}: cannot create the signing key: ${describeStorageFailure(err)}`);
  }
  try {
    fs.fchmodSync(fd, KEY_FILE_MODE);
    const seed = crypto.randomBytes(ED25519_SEED_BYTES);
    let written = 0;
    while (written < seed.length) written += fs.writeSync(fd, seed, written, seed.length - written);
    fs.fsyncSync(fd);
  } catch (err) {
    // An empty or short key file would be refused as invalid from then on, even
    // once space returns: remove the file this call created, so a later call can create it.
    const removed = removeCreatedKey(route, dirFd, fd);
    throw new UnsafeStorageError(
      `${shown}: cannot write the new signing key: ${describeStorageFailure(err)}${removed ? '' : '; the partial key file could not be removed'}`,
    );
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.fsyncSync(dirFd); // make the new directory entry durable too
  } catch {
    // Some file systems refuse fsync on a directory; the key file itself is synced.
  }
  return true;
}

/** Unlinks the key file just created through `fd`, if the name still refers to it. */
function removeCreatedKey(route: DescriptorRoute, dirFd: number, fd: number): boolean {
  try {
    const ours = fs.fstatSync(fd);
    const named = entryIdentityAt(route, dirFd, SIGNING_KEY_FILE);
    if (named === undefined || ours.dev !== named.dev || ours.ino !== named.ino) return false;
    route.unlinkAt(dirFd, SIGNING_KEY_FILE);
    return true;
  } catch {
    return false;
  }
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
    sha256: crypto.createHash('sha256').update(seed).digest('hex'),
  };
}

/** Opens, checks and reads the key file; undefined when it does not exist. Throws UnsafeStorageError. */
export function readKeyFile(route: DescriptorRoute, dirFd: number, shown: string): KeyFileRead | undefined {
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
    if (linked !== undefined) throw new UnsafeStorageError(`${shown}: unsafe signing key: ${linked}`);
    if ((stat.mode & 0o077) !== 0) {
      throw new UnsafeStorageError(
        `${shown}: unsafe signing key: mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')} grants group or other access; expected 0600`,
      );
    }
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
      throw new UnsafeStorageError(
        `${shown}: invalid signing key: is ${size} bytes; expected exactly ${ED25519_SEED_BYTES} raw bytes (an Ed25519 seed)`,
      );
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
export function loadSigningKeyFile(
  route: DescriptorRoute,
  dirFd: number,
  shownDir: string,
  options: { create: boolean },
): ProjectSigningKey | undefined {
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
  if (pinned === undefined) {
    const created = createKeyFile(route, dirFd, shown);
    pinned = readAndBuild(route, dirFd, shown);
    if (pinned === undefined) throw new UnsafeStorageError(`${shown}: the signing key vanished right after it was created`);
    return { ...pinned, created };
  }
  return pinned;
}

function readAndBuild(route: DescriptorRoute, dirFd: number, shown: string): PinnedSigningKey | undefined {
  const read = readKeyFile(route, dirFd, shown);
  if (read === undefined) return undefined;
  return { key: signingKeyFromSeed(read.seed), seed: read.seed, file: read.identity, shownPath: shown };
}

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { projectDirectoriesProblem } from '../storage/directory-ownership.js';
import { SCHEMAPIN_PINS_MAX_BYTES } from '../limits.js';
import { ConfinementError, type PinnedDirectory, readTextFileAt } from '../confinement/index.js';
import { openPrivateDirectory, UnsafeStorageError } from '../storage/private-directory.js';
import { normalizePinHost } from './pin-host.js';
import { SchemaPinCheckError } from './schemapin-errors.js';
import { isKeyFingerprint } from './key-document.js';
import { isRecord } from '../json-value.js';
import { fileModeText } from '../text/file-mode.js';

// Trust on first use: the first key fingerprint seen for a key host is written
// to .symbiont/schemapin/pins.json and every later key from that host must
// match it. The file lives in the server's private storage, is read without
// following symlinks, and is replaced atomically (write a fresh 0600 file,
// fsync, rename) so a crash leaves either the old or the new pin set.
// Updates are synchronous, so within one process no two of them interleave;
// two processes updating at once resolve as last writer wins.
// Hosts are keyed by their normalized spelling (pin-host.ts), both the host
// asked about and every key read from the file, so a pin stored in an older
// spelling still matches and is rewritten normalized on the next update.

export interface PinEntry {
  fingerprint: string;
  first_seen: string;
}

export type PinOutcome = { state: 'new' | 'matched' } | { state: 'mismatch'; pinned: PinEntry } | { state: 'unpinned' };

const PINS_FILE = 'pins.json';
const STORE_COMPONENTS = ['.symbiont', 'schemapin'] as const;

export class PinStore {
  constructor(private readonly project: PinnedDirectory) {}

  private get shownFile(): string {
    return `${this.project.displayPath}/.symbiont/schemapin/${PINS_FILE}`;
  }

  /** The pin for `host`, or null. */
  lookup(host: string): PinEntry | null {
    return this.withDirectory((dirFd) => this.read(dirFd).get(normalizePinHost(host)) ?? null);
  }

  /** Every pin, by host. */
  list(): Map<string, PinEntry> {
    return this.withDirectory((dirFd) => this.read(dirFd));
  }

  /**
   * Compares `fingerprint` with the pin for `host`. With no pin yet, pins it
   * when `pinIfAbsent` (the signature verified) and reports 'new'; otherwise 'unpinned'.
   */
  check(host: string, fingerprint: string, pinIfAbsent: boolean, now: Date = new Date()): PinOutcome {
    const key = normalizePinHost(host);
    return this.withDirectory((dirFd) => {
      const pins = this.read(dirFd);
      const pinned = pins.get(key);
      if (pinned) return pinned.fingerprint === fingerprint ? { state: 'matched' } : { state: 'mismatch', pinned };
      if (!pinIfAbsent) return { state: 'unpinned' };
      pins.set(key, { fingerprint, first_seen: now.toISOString() });
      this.write(dirFd, pins);
      return { state: 'new' };
    });
  }

  /** Removes the pin for `host`; returns what was removed, or null when there was none. */
  unpin(host: string): PinEntry | null {
    const key = normalizePinHost(host);
    return this.withDirectory((dirFd) => {
      const pins = this.read(dirFd);
      const removed = pins.get(key) ?? null;
      if (removed) {
        pins.delete(key);
        this.write(dirFd, pins);
      }
      return removed;
    });
  }

  private withDirectory<T>(work: (dirFd: number) => T): T {
    // Another user who can rename .symbiont/ away could erase every pin (directory-ownership.ts).
    const directoriesProblem = projectDirectoriesProblem(this.project);
    if (directoriesProblem !== undefined) throw new SchemaPinCheckError(`pin store refused: ${directoriesProblem}`);
    let dirFd: number;
    try {
      dirFd = openPrivateDirectory(this.project, STORE_COMPONENTS, { create: true });
    } catch (err) {
      if (err instanceof UnsafeStorageError) throw new SchemaPinCheckError(`pin store refused: ${err.message}`);
      throw err;
    }
    try {
      return work(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
  }

  private read(dirFd: number): Map<string, PinEntry> {
    const shown = this.shownFile;
    let text: string;
    try {
      const file = readTextFileAt(this.project.route, dirFd, PINS_FILE, SCHEMAPIN_PINS_MAX_BYTES, shown);
      const uid = process.getuid?.();
      if ((uid !== undefined && file.stat.uid !== uid) || (file.stat.mode & 0o077) !== 0) {
        throw new SchemaPinCheckError(
          `pin store refused: ${shown} must be owned by this user with mode 0600 (it is ${fileModeText(file.stat.mode & 0o777)}, uid ${file.stat.uid})`,
        );
      }
      text = file.text;
    } catch (err) {
      if (err instanceof ConfinementError && err.code === 'not_found') return new Map();
      if (err instanceof ConfinementError) throw new SchemaPinCheckError(`pin store refused: ${err.message}`);
      throw err;
    }
    return parsePins(text, shown);
  }

  private write(dirFd: number, pins: Map<string, PinEntry>): void {
    const sorted = [...pins.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const text = JSON.stringify({ version: 1, pins: Object.fromEntries(sorted) }, null, 2) + '\n';
    const tmpName = `.${PINS_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const route = this.project.route;
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = route.flags;
    let fd: number | undefined;
    try {
      fd = route.openAt(dirFd, tmpName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      fd = undefined;
      route.renameAt(dirFd, tmpName, PINS_FILE);
      fs.fsyncSync(dirFd);
    } catch (err) {
      if (fd !== undefined) fs.closeSync(fd);
      try {
        route.unlinkAt(dirFd, tmpName);
      } catch {
        // already renamed or never created
      }
      throw new SchemaPinCheckError(`could not update ${this.shownFile} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
}

function parsePins(text: string, shown: string): Map<string, PinEntry> {
  const damaged = (what: string): never => {
    throw new SchemaPinCheckError(`pin store ${shown} is damaged (${what}); repair it, or remove it to forget every pin`);
  };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    damaged('not JSON');
  }
  if (!isRecord(doc)) damaged('not a JSON object');
  const record = doc as Record<string, unknown>;
  if (record.version !== 1) damaged(`version ${JSON.stringify(record.version)}; expected 1`);
  const pins = record.pins;
  if (!isRecord(pins)) damaged('"pins" is not an object');
  const result = new Map<string, PinEntry>();
  for (const [host, entry] of Object.entries(pins as Record<string, unknown>)) {
    const e = entry as Record<string, unknown> | null;
    if (e === null || typeof e !== 'object' || typeof e.fingerprint !== 'string' || !isKeyFingerprint(e.fingerprint) || typeof e.first_seen !== 'string') {
      damaged(`the pin for ${JSON.stringify(host)} needs a "sha256:<hex>" fingerprint and a first_seen time`);
    }
    const pin = { fingerprint: e!.fingerprint as string, first_seen: e!.first_seen as string };
    const key = normalizePinHost(host);
    const other = result.get(key);
    // Two spellings of one host (the later one pinned while spellings were told apart):
    // the first key seen for the host is its trust-on-first-use pin.
    if (other === undefined || firstSeenBefore(pin, other)) result.set(key, pin);
  }
  return result;
}

function firstSeenBefore(a: PinEntry, b: PinEntry): boolean {
  const at = Date.parse(a.first_seen);
  const bt = Date.parse(b.first_seen);
  return Number.isFinite(at) && (!Number.isFinite(bt) || at < bt);
}

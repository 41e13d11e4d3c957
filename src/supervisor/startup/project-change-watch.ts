import fs from 'node:fs';
import { decodeUtf8Strict, fileFlags, type PinnedDirectory } from '../../shared/confinement/index.js';
import type { OperatorLog } from '../operator/operator-log.js';

// The server keeps the startup snapshot until it restarts (the specification's rule): an agent
// file, AGENTS.md or a policy file edited meanwhile changes nothing. So that the disk and the
// server do not disagree silently, the files the snapshot was taken from are looked at every
// few seconds, and on the first difference one warning names what changed and that a restart
// applies it; then the looking stops.
//
// Looked at, not watched: fs.watch takes a path, and watches whatever that path names when it
// is called (a renamed project or agents/ folder takes the watch with it, a replaced one leaves
// it behind), and macOS reports by path. Every look here goes through the pinned project
// descriptor with the confinement route that read the snapshot, never following a symlink, so
// it sees exactly the directory the snapshot came from, on every platform.

/** How often the files are looked at. */
export const CHANGE_LOOK_INTERVAL_MS = 2000;
/** Entries looked at per folder; a folder beyond it is compared by its first entries only. */
const ENTRIES_MAX = 2048;

const WATCHED: readonly { components: string[]; keep: (name: string) => boolean }[] = [
  { components: ['agents'], keep: (name) => (name.endsWith('.symbi') || name.endsWith('.dsl')) && !name.startsWith('.') },
  { components: ['policies'], keep: (name) => name.endsWith('.cedar') && !name.startsWith('.') },
  { components: ['policies', 'mcp-server'], keep: (name) => name.endsWith('.cedar') && !name.startsWith('.') },
];

/** Project-relative path -> what identifies its current content (or why it could not be looked at). */
type Fingerprint = Map<string, string>;

function entryState(project: PinnedDirectory, dirFd: number, name: string): string {
  const route = project.route;
  let fd: number;
  try {
    fd = route.openAt(dirFd, name, fileFlags(route));
  } catch (err) {
    return `unopenable ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  try {
    const s = fs.fstatSync(fd, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}:${s.mode}`;
  } catch {
    return 'unstattable';
  } finally {
    fs.closeSync(fd);
  }
}

function fingerprint(project: PinnedDirectory): Fingerprint {
  const out: Fingerprint = new Map();
  out.set('AGENTS.md', entryState(project, project.fd, 'AGENTS.md'));
  for (const { components, keep } of WATCHED) {
    const shown = components.join('/');
    let dirFd: number;
    try {
      dirFd = project.openDirectory(components);
    } catch (err) {
      out.set(`${shown}/`, `absent ${(err as { code?: string }).code ?? 'error'}`);
      continue;
    }
    try {
      out.set(`${shown}/`, 'present');
      for (const raw of project.route.list(dirFd, ENTRIES_MAX).names) {
        let name: string;
        try {
          name = decodeUtf8Strict(raw, 'entry');
        } catch {
          continue;
        }
        if (keep(name)) out.set(`${shown}/${name}`, entryState(project, dirFd, name));
      }
    } finally {
      fs.closeSync(dirFd);
    }
  }
  return out;
}

function differences(before: Fingerprint, after: Fingerprint): string[] {
  const changed = new Set<string>();
  for (const [file, state] of before) if (after.get(file) !== state) changed.add(file);
  for (const file of after.keys()) if (!before.has(file)) changed.add(file);
  return [...changed].sort();
}

/** Starts looking; returns the function that stops. */
export function watchProjectChanges(project: PinnedDirectory, log: OperatorLog, intervalMs = CHANGE_LOOK_INTERVAL_MS): () => void {
  if (!project.access.available) return () => undefined;
  let before: Fingerprint;
  try {
    before = fingerprint(project);
  } catch {
    return () => undefined;
  }
  const timer = setInterval(() => {
    let changed: string[];
    try {
      changed = differences(before, fingerprint(project));
    } catch {
      return;
    }
    if (changed.length === 0) return;
    clearInterval(timer);
    log.warn(
      `changed on disk since startup: ${changed.join(', ')}; the server keeps using what it read at startup until it is restarted (a restart applies the change)`,
      { event: 'project.changed', files: changed },
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

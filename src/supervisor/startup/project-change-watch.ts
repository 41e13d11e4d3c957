import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { decodeUtf8Strict, fileFlags, type PinnedDirectory } from '../../shared/confinement/index.js';
import type { OperatorLog } from '../operator/operator-log.js';

// The server keeps the startup snapshot until it restarts (the specification's rule): an agent
// file, AGENTS.md or a policy file edited meanwhile changes nothing. So that the disk and the
// server do not disagree silently, the files the snapshot was taken from are looked at, and on
// the first difference one warning names what changed and that a restart applies it; then the
// looking stops.
//
// The look is the judge: it goes through the pinned project descriptor with the confinement
// route that read the snapshot, never following a symlink, so it sees exactly the directories
// the snapshot came from. What decides when to look:
//
// - On Linux, a file-system notification. inotify watches an inode, and fs.watch on
//   /proc/self/fd/N (N a descriptor opened through the confinement route) watches the directory
//   N names, wherever it is renamed to; a folder put in its place is not watched, but the
//   replacement is itself an event in the parent, which is watched too. A notification only
//   says "look now" (filtered by name, so an editor's swap file costs nothing).
// - Elsewhere, or where a notification would not come, every CHANGE_LOOK_INTERVAL_MS: fs.watch
//   takes a path on macOS and FreeBSD (FSEvents report by path; kqueue watches a vnode but says
//   nothing of a file edited inside a watched directory), and network and FUSE file systems send
//   no notification for a change made by another machine (or by the FUSE server itself), so
//   their type (statfs) chooses the poll. SYMBI_CHANGE_WATCH=poll chooses it too.
//
// Beside notifications there is no slower safety poll: what only a poll would see (docs/running.md,
// "Edits after startup") is rare, and even one look a minute at 1,000 agents would cost an idle
// server many times the CPU an idle server-filesystem spends (measured in docs/benchmarks.md, "Idle CPU").

/** How often the files are looked at without notifications, and at most how often with them. */
export const CHANGE_LOOK_INTERVAL_MS = 2000;
/** `poll` looks every CHANGE_LOOK_INTERVAL_MS even where notifications would come (tests, and file systems the type check misses). */
export const CHANGE_WATCH_ENV = 'SYMBI_CHANGE_WATCH';
const CHANGE_WATCH_MODES = ['notify', 'poll'] as const;
/** A save is often several steps (a temporary file written, then renamed over the old one): the look waits for the rest. */
const NOTICE_SETTLE_MS = 100;
/** Entries looked at per folder; a folder beyond it is compared by its first entries only. */
const ENTRIES_MAX = 2048;

const WATCHED: readonly { components: string[]; keep: (name: string) => boolean }[] = [
  { components: ['agents'], keep: (name) => (name.endsWith('.symbi') || name.endsWith('.dsl')) && !name.startsWith('.') },
  { components: ['policies'], keep: (name) => name.endsWith('.cedar') && !name.startsWith('.') },
  { components: ['policies', 'mcp-server'], keep: (name) => name.endsWith('.cedar') && !name.startsWith('.') },
];

/** Project-relative path -> what identifies its current content (or why it could not be looked at). */
type Fingerprint = Map<string, string>;

/** What the watch compares with: the project as the startup snapshot read it (takeChangeReference, then descriptorState of each file read). */
export type ChangeReference = ReadonlyMap<string, string>;

/** What identifies the content of the open file `fd`: the state the look records for it. */
export function descriptorState(fd: number): string {
  const s = fs.fstatSync(fd, { bigint: true });
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}:${s.mode}`;
}

function entryState(project: PinnedDirectory, dirFd: number, name: string): string {
  const route = project.route;
  let fd: number;
  try {
    fd = route.openAt(dirFd, name, fileFlags(route));
  } catch (err) {
    return `unopenable ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  try {
    return descriptorState(fd);
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

/**
 * The look's fingerprint, taken by the startup snapshot before it reads anything; the snapshot then
 * replaces each file's entry with the state of the descriptor it read that file through.
 */
export function takeChangeReference(project: PinnedDirectory): Map<string, string> {
  return fingerprint(project);
}

function differences(before: ChangeReference, after: Fingerprint): string[] {
  const changed = new Set<string>();
  for (const [file, state] of before) if (after.get(file) !== state) changed.add(file);
  for (const file of after.keys()) if (!before.has(file)) changed.add(file);
  return [...changed].sort();
}

// Network and cluster file systems, and FUSE (sshfs, rclone, virtiofs...), by statfs f_type: a change
// made through another machine or by the FUSE server sends no inotify event here. Values from Linux
// include/uapi/linux/magic.h (torvalds/linux 05909cd9a0c8), CIFS and SMB2 from its commit dea29037192
// (5.17), FUSE from fs/fuse/inode.c (8a517c514d58), Ceph from fs/ceph/super.h, GFS2 from
// include/uapi/linux/gfs2_ondisk.h, vboxsf from fs/vboxsf/super.c.
const REMOTE_FILE_SYSTEMS = new Map<number, string>([
  [0x6969, 'NFS'],
  [0x517b, 'SMB'],
  [0xff534d42, 'CIFS'],
  [0xfe534d42, 'SMB2'],
  [0x65735546, 'FUSE'],
  [0x00c36400, 'Ceph'],
  [0x01021997, '9p'],
  [0x73757245, 'Coda'],
  [0x5346414f, 'AFS'],
  [0x6b414653, 'AFS'],
  [0x7461636f, 'OCFS2'],
  [0x01161970, 'GFS2'],
  [0x786f4256, 'VirtualBox shared folder'],
]);

/** The folders watched: the project root (AGENTS.md, and agents/ or policies/ appearing) and each looked-at folder. */
const WATCHED_FOLDERS: readonly (readonly string[])[] = [[], ...WATCHED.map((w) => w.components)];

/** Which entry names in the folder `components` the look reads: a notification naming another is not worth a look. */
function readByTheLook(components: readonly string[]): (name: string) => boolean {
  const shown = components.join('/');
  const keep = WATCHED.find((w) => w.components.join('/') === shown)?.keep;
  const folders = new Set(
    WATCHED.filter((w) => w.components.length === components.length + 1 && w.components.slice(0, -1).join('/') === shown).map((w) => w.components.at(-1)!),
  );
  if (components.length === 0) folders.add('AGENTS.md');
  return (name) => folders.has(name) || (keep?.(name) ?? false);
}

type Notifications = { watchers: fs.FSWatcher[] } | { reason: string; level: 'info' | 'warn' };

function closeAll(watchers: readonly fs.FSWatcher[]): void {
  for (const w of watchers) w.close();
}

/**
 * Watches each looked-at folder that exists, by inode (see the header), calling `notice` for each
 * notification about a name the look reads and `failed` if a watch breaks; or says why not.
 */
function watchFolders(project: PinnedDirectory, env: NodeJS.ProcessEnv, notice: () => void, failed: (reason: string) => void): Notifications {
  const mode = env[CHANGE_WATCH_ENV];
  if (mode === 'poll') return { reason: `${CHANGE_WATCH_ENV}=poll`, level: 'info' };
  if (mode !== undefined && mode !== '' && !(CHANGE_WATCH_MODES as readonly string[]).includes(mode)) {
    return { reason: `${CHANGE_WATCH_ENV}=${JSON.stringify(mode).slice(0, 40)} is not a mode; use ${CHANGE_WATCH_MODES.join(' or ')}`, level: 'warn' };
  }
  if (process.platform !== 'linux') {
    const why =
      process.platform === 'darwin'
        ? 'they follow paths (FSEvents), not the folders the snapshot was read from'
        : 'none known here watches a folder and reports a file edited in it';
    return { reason: `file-system notifications are not used on ${process.platform}: ${why}`, level: 'info' };
  }
  const watchers: fs.FSWatcher[] = [];
  for (const components of WATCHED_FOLDERS) {
    const shown = components.length === 0 ? 'the project folder' : `${components.join('/')}/`;
    let dirFd: number;
    try {
      dirFd = project.openDirectory(components);
    } catch {
      // Absent (or not a folder the look can read): its appearing is an event in its parent, watched before it.
      continue;
    }
    const viaProc = `/proc/self/fd/${dirFd}`;
    try {
      const remote = REMOTE_FILE_SYSTEMS.get(Number(fs.statfsSync(viaProc).type));
      if (remote !== undefined) {
        closeAll(watchers);
        return { reason: `${shown} is on a ${remote} file system, which sends no notification for a change made elsewhere`, level: 'info' };
      }
      const opened = fs.fstatSync(dirFd);
      const reached = fs.statSync(viaProc);
      if (opened.dev !== reached.dev || opened.ino !== reached.ino) {
        closeAll(watchers);
        return { reason: `${viaProc} is not ${shown} (/proc is not this process's procfs)`, level: 'warn' };
      }
      const matters = readByTheLook(components);
      const watcher = fs.watch(viaProc, { persistent: false }, (_event, name) => {
        if (name === null || matters(name)) notice();
      });
      watcher.on('error', (err: NodeJS.ErrnoException) => failed(`the notification watch of ${shown} failed (${err.code ?? err.message})`));
      watchers.push(watcher);
    } catch (err) {
      closeAll(watchers);
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      const limit =
        code === 'ENOSPC'
          ? ' (the inotify watch limit, fs.inotify.max_user_watches)'
          : code === 'EMFILE'
            ? ' (the inotify instance limit, fs.inotify.max_user_instances)'
            : '';
      return { reason: `no file-system notifications for ${shown} through ${viaProc}: ${code}${limit}`, level: 'warn' };
    } finally {
      fs.closeSync(dirFd);
    }
  }
  return { watchers };
}

export interface ChangeWatchOptions {
  /**
   * What the startup snapshot read (startup-snapshot.ts): an edit made after it, even before the
   * watch starts, is named. Without it (tests), the files as they are when the watch starts.
   */
  reference?: ChangeReference;
  /** Where SYMBI_CHANGE_WATCH is read; process.env when absent. */
  env?: NodeJS.ProcessEnv;
  intervalMs?: number;
}

/** Starts watching (or looking every few seconds); returns the function that stops. */
export function watchProjectChanges(project: PinnedDirectory, log: OperatorLog, options: ChangeWatchOptions = {}): () => void {
  if (!project.access.available) return () => undefined;
  const intervalMs = options.intervalMs ?? CHANGE_LOOK_INTERVAL_MS;
  let before: ChangeReference | undefined;
  let stopped = false;
  let watchers: fs.FSWatcher[] = [];
  let poll: NodeJS.Timeout | undefined;
  let pending: NodeJS.Timeout | undefined;
  let lastLook = Number.NEGATIVE_INFINITY;
  const stop = (): void => {
    stopped = true;
    clearTimeout(pending);
    clearInterval(poll);
    closeAll(watchers);
    watchers = [];
  };
  const look = (): void => {
    pending = undefined;
    if (stopped || before === undefined) return;
    lastLook = performance.now();
    let changed: string[];
    try {
      changed = differences(before, fingerprint(project));
    } catch {
      return;
    }
    if (changed.length === 0) return;
    stop();
    log.warn(
      `changed on disk since startup: ${changed.join(', ')}; the server keeps using what it read at startup until it is restarted (a restart applies the change)`,
      { event: 'project.changed', files: changed },
    );
  };
  // One look per burst of notifications, and never more looks than the poll would make.
  const lookSoon = (): void => {
    if (stopped || pending !== undefined) return;
    pending = setTimeout(look, Math.max(NOTICE_SETTLE_MS, lastLook + intervalMs - performance.now()));
    pending.unref();
  };
  const pollInstead = (reason: string, level: 'info' | 'warn'): void => {
    closeAll(watchers);
    watchers = [];
    if (stopped || poll !== undefined) return;
    log.write(level, `edits after startup are looked for every ${intervalMs / 1000} s: ${reason}`, {
      event: 'project.change_poll',
      reason,
      interval_ms: intervalMs,
    });
    poll = setInterval(look, intervalMs);
    poll.unref();
  };
  const notifications = watchFolders(project, options.env ?? process.env, lookSoon, (reason) => {
    pollInstead(reason, 'warn');
    // What the broken watch may have missed.
    lookSoon();
  });
  // The snapshot's reference: what changed since it read the files, before the watches were in
  // place, is found by one look now. Without it, fingerprinted once the watches are in place: an
  // edit made meanwhile is in `before` or notified.
  try {
    before = options.reference ?? fingerprint(project);
  } catch {
    if ('watchers' in notifications) closeAll(notifications.watchers);
    return () => undefined;
  }
  if ('watchers' in notifications) watchers = notifications.watchers;
  else pollInstead(notifications.reason, notifications.level);
  if (options.reference !== undefined) lookSoon();
  return stop;
}

import fs from 'node:fs';
import { closeAuditStorage, openRunAuditStorage } from '../shared/storage/audit-storage.js';
import { reserveJournalFile } from '../shared/journal/journal-writer.js';
import { WORKER_IDLE_TIMEOUT_MS } from '../shared/worker-protocol.js';
import type { WorkerResources } from './worker-resources.js';

// One journal file made ahead of the next run, in each worker thread.
//
// Creating a file costs the file system far more than naming one that exists, above all
// while the previous run's syncs commit (docs/benchmarks.md). So after each run, once its
// result is on its way, the thread makes an unnamed file (O_TMPFILE, Linux) for the
// next run's journal, and that run only names it. An unnamed file leaves nothing
// behind if the process ends, and naming it fails if the name exists, as O_EXCL does.
//
// Worker threads share the process's descriptors and a terminated thread closes none
// of them (invocation-pool.ts), so the reserve is closed after half the pool's idle
// timeout without a run: a thread the pool later ends holds none.

const RESERVE_KEPT_IDLE_MS = WORKER_IDLE_TIMEOUT_MS / 2;

let reservedFd: number | undefined;
let idleTimer: NodeJS.Timeout | undefined;
/** Off for this thread once reserving or naming failed: the route, file system or /proc cannot do it. */
let reserving = true;

/** The reserved file for a run that is starting (undefined when there is none); the run owns it now. */
export function takeReservedJournalFile(): number | undefined {
  const fd = reservedFd;
  reservedFd = undefined;
  return fd;
}

/** A reserved file could not be named: make no more in this thread. */
export function stopReservingJournalFiles(): void {
  reserving = false;
}

/** Makes the next run's journal file, unless one is waiting; never throws (a run without one creates its own). */
export function reserveNextJournalFile(resources: WorkerResources): void {
  if (!reserving || reservedFd !== undefined || !resources.project.access.available) return;
  try {
    const storage = openRunAuditStorage(resources.project, resources.signingKey);
    try {
      reservedFd = reserveJournalFile(storage);
    } finally {
      closeAuditStorage(storage);
    }
  } catch {
    reserving = false;
  }
  if (reservedFd === undefined) {
    reserving = false;
    return;
  }
  clearTimeout(idleTimer);
  idleTimer = setTimeout(dropReservedJournalFile, RESERVE_KEPT_IDLE_MS).unref();
}

function dropReservedJournalFile(): void {
  const fd = takeReservedJournalFile();
  if (fd !== undefined) fs.closeSync(fd);
}

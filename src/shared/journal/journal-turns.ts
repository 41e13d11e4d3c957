// A run's journal waits for the disk before it writes, not after.
//
// A write's sync goes to libuv's thread pool, which every thread of the process shares and
// serves first come, first served. With hundreds of runs in flight it held about a thousand
// syncs, and each run waited there with its records written but not yet durable: a journal
// its owner cannot end (journal-handover.ts), so a cancel waited for the worker thread, which
// was busy doing the same for every other cancelled run.
//
// So each thread lets only JOURNAL_TURNS_PER_THREAD of its appends write and sync at a time;
// the others wait here, in order, before they write anything. A run waiting for its first turn
// has no journal yet, and a run waiting for a later one has a journal whose last record is
// durable, so the owner ends a run cancelled meanwhile at once, from the supervisor. A stopped
// run does not wait. The pool is still handed more syncs than it has threads to make them;
// docs/benchmarks.md has the figures that chose the number.

/** Appends of one thread that may be writing and syncing at once. */
export const JOURNAL_TURNS_PER_THREAD = 16;

/** Gives the turn back; calling it again does nothing. */
export type ReleaseTurn = () => void;

class DiskTurns {
  private free = JOURNAL_TURNS_PER_THREAD;
  private readonly waiting: (() => void)[] = [];

  /**
   * Resolves once this thread may write and sync, or at once when `stop` is or becomes
   * aborted (a stopped run goes ahead of every waiting one, beyond the limit).
   */
  async take(stop: AbortSignal): Promise<ReleaseTurn> {
    if (this.free > 0 || stop.aborted) this.free -= 1;
    // A turn given back is handed to the first waiting run, which then holds it.
    else await this.wait(stop);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.free += 1;
      const next = this.free > 0 ? this.waiting.shift() : undefined;
      if (next !== undefined) {
        this.free -= 1;
        next();
      }
    };
  }

  private wait(stop: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const handedOver = (): void => {
        stop.removeEventListener('abort', stopped);
        resolve();
      };
      const stopped = (): void => {
        this.waiting.splice(this.waiting.indexOf(handedOver), 1);
        this.free -= 1;
        resolve();
      };
      this.waiting.push(handedOver);
      stop.addEventListener('abort', stopped, { once: true });
    });
  }
}

/** This thread's turns (each worker thread loads its own copy of this module). */
export const journalTurns = new DiskTurns();

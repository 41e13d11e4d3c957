// Who may write a run's journal: its worker thread, or, once the caller cancels, the run's owner
// in the supervisor. A worker thread busy with hundreds of other runs can take a long time to
// reach a cancel, while the owner sees it at once; between two of the worker's writes the
// journal on disk is a verified chain that the owner can end itself (terminal-recovery.ts).
//
// One shared integer says which of them holds the journal. The worker's writer moves it to
// Busy around every write, so the owner never writes while a record of the worker's is on its
// way to the disk, and the worker never writes after the owner took the journal. The owner
// takes it only when it is Open; the worker keeps it Busy while only it can end the run
// correctly (before its first records are durable, while a failed attempt's finish waits for
// the retry's write, once its file cannot be trusted).

// A new buffer holds 0: no record is durable yet, and only the worker writes.
/** The last write is durable and nothing is pending: the owner may take the journal. */
const OPEN = 1;
/** The worker is writing, or holds a record that must come next, or alone can end the run. */
const BUSY = 2;
/** The owner took the journal; the worker writes nothing more. */
const TAKEN = 3;
/** The worker wrote the Terminated record. */
const ENDED = 4;

export class JournalHandover {
  private readonly state: Int32Array;

  /** `buffer` is shared between the owner and the worker thread (it crosses postMessage uncopied). */
  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)) {
    this.state = new Int32Array(buffer, 0, 1);
  }

  /** The worker, before a write: false when the owner has taken the journal (write nothing). */
  beginWrite(): boolean {
    return Atomics.compareExchange(this.state, 0, OPEN, BUSY) !== TAKEN;
  }

  /** The worker, after a write: what the journal now is. Only the worker leaves 0 and Busy. */
  endWrite(after: 'open' | 'busy' | 'ended'): void {
    if (after === 'busy') return;
    Atomics.store(this.state, 0, after === 'ended' ? ENDED : OPEN);
  }

  /** The worker keeps the journal until its next write (a record is pending); false when already taken. */
  hold(): boolean {
    return Atomics.compareExchange(this.state, 0, OPEN, BUSY) !== TAKEN;
  }

  /** The owner: takes the journal if the worker is between writes. The worker then writes nothing more. */
  take(): boolean {
    return Atomics.compareExchange(this.state, 0, OPEN, TAKEN) === OPEN;
  }

  get taken(): boolean {
    return Atomics.load(this.state, 0) === TAKEN;
  }
}

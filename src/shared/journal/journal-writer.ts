import fs from 'node:fs';
import { canonicalJson, sha256Hex } from '../canonical-json.js';
import { JOURNAL_FILE_MAX_BYTES, JOURNAL_LINE_MAX_BYTES } from '../limits.js';
import { type DescriptorRoute, entryIdentityAt, hardLinkProblem } from '../confinement/index.js';
import type { AuditStorage } from '../storage/audit-storage.js';
import {
  encodeRecordLine,
  GENESIS_PREVIOUS_HASH,
  JOURNAL_FILE_SUFFIX,
  JOURNAL_FORMAT_VERSION,
  STARTED_EVENT,
  TERMINATED_EVENT,
  type TerminalReason,
} from './journal-format.js';
import { inspectJournalBytes, unsignableProblem } from './journal-verifier.js';
import { isCanonicalUuid } from '../text/uuid.js';
import { describeStorageFailure } from '../storage/storage-failure.js';
import type { JournalHandover } from './journal-handover.js';
import { journalTurns, type ReleaseTurn } from './journal-turns.js';
import type { RunBudget, RunRecord } from './run-records.js';
import { isRecord } from '../json-value.js';
import { hasUnconfirmedOutcome, startsEffect, UNCONFIRMED_OUTCOME_REFUSAL } from './symbiont-writer-rule.js';

// Appends signed, chained records to one run's journal. Each append is durable
// (fdatasync) before its promise resolves, because the caller acts on that
// durability: the provider request is sent only after DirectInferenceRequested
// is on disk, and model text is released only after Terminated is.
//
// The write is synchronous and the fdatasync is not: a sync waits for the
// disk, and done on libuv's thread pool the syncs of concurrent runs (each its
// own file) overlap, so the file system commits them together instead of one
// after another while the worker's event loop, and every run on it, stands
// still. Appends of one writer run one at a time: a record's hash chains to the
// record before it, which is final only once durable.
//
// The writer signs only records Symbiont's own writer would append: nothing that starts an effect
// after a record with an unconfirmed outcome (symbiont-writer-rule.ts), and nothing `audit inspect`
// or Symbiont's types would refuse (unsignableProblem: an unpaired surrogate, a number above a u32
// field or not written as the writer writes numbers). A run's records are built, and typed, by
// run-records.ts; provider data is made well-formed where it enters (worker/providers/), so a
// refusal here means a bug, and the run still ends with a terminal record that verifies. A record is a RunRecord (the event and its
// entry's iteration), or a bare event, which gets iteration 1 (the 0.1 format, kept for tests of
// the writer itself and of journals written by earlier versions).
//
// The file is written with O_APPEND from one descriptor. Before every append
// the writer checks that the file still ends where its own last record ended;
// if anything else wrote to or truncated the file, the chain on disk is no
// longer ours, so every later effect record is refused. The terminal record is
// still attempted so the run's end is recorded as far as possible (a verifier
// then rejects the file, which is the honest outcome).
//
// A write that fails (a full disk, an exhausted quota, an I/O error) must never
// leave a journal that fails verification:
// - the file is cut back to the end of the last durable record, so it stays a
//   verified prefix and the run can still try to record its end; if it cannot
//   be cut back, its partial line stays as an unverified tail (inspect reports
//   it and asks for reconciliation) and nothing is ever written after it;
// - when the first records of a journal this writer created could not be made
//   durable, the file is removed: a file without a signed Started record would
//   claim to be a journal and fail verification, and the run never reached its
//   provider call, so there is nothing to audit;
// - a Terminated record is only ever written after, or together with, a
//   Started record.

export class JournalWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JournalWriteError';
  }
}

/** The run's journal already exists: journals are never reused, and creating one is how a writer claims its run. */
export class JournalExistsError extends JournalWriteError {
  constructor(message: string) {
    super(message);
    this.name = 'JournalExistsError';
  }
}

/** The run's owner took the journal to end the run itself (journal-handover.ts): this writer writes nothing more. */
export class JournalTakenError extends JournalWriteError {
  constructor(message: string) {
    super(message);
    this.name = 'JournalTakenError';
  }
}

const JOURNAL_FILE_MODE = 0o600;

export interface JournalOptions {
  /** An unnamed file made ahead of the run (reserveJournalFile), to name rather than create a file. */
  reservedFd?: number;
  /** Asked at each append: sync in this thread (true) or on libuv's pool (false, the default). */
  syncInThread?: () => boolean;
  /** Shared with the run's owner, who may take the journal between two writes to end a cancelled run. */
  handover?: JournalHandover;
  /**
   * A journal a cancel waits for (an owner's claim on a run no worker started): the new directory
   * entry is synced here and now, in this thread, rather than queued on libuv's pool behind other
   * runs' syncs.
   */
  urgent?: boolean;
  /**
   * A worker thread's run: its stop signal (a cancel or the deadline). Until it is aborted, the
   * journal is named, and each later write made, only in one of this thread's turns
   * (journal-turns.ts), so that while a run waits for the disk its owner can end it. Once it is,
   * the run's end is what a cancel waits for: its writes wait for no turn, and every sync it
   * still needs, those already queued on libuv's pool and those it starts later, is made at
   * once in this thread.
   */
  stopSignal?: AbortSignal;
}

/**
 * Makes an unnamed journal file (mode 0600) in the storage's directory, for a later
 * run's JournalWriter.create to name, or returns undefined where the route cannot
 * (journal-reserve.ts says why a worker keeps one). The caller closes it if unused.
 */
export function reserveJournalFile(storage: AuditStorage): number | undefined {
  if (storage.route.openUnnamedFile === undefined || storage.route.nameUnnamedFile === undefined) return undefined;
  const fd = storage.route.openUnnamedFile(storage.governedDirFd, JOURNAL_FILE_MODE);
  try {
    fs.fchmodSync(fd, JOURNAL_FILE_MODE);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  return fd;
}

/**
 * Gives a reserved file the journal's name, which fails if anything has that name, as
 * O_EXCL would. Returns the descriptor, or closes it and returns undefined when the
 * file cannot be named here (the caller then creates the journal as usual).
 */
function nameReservedFile(storage: AuditStorage, fd: number, name: string, exists: () => JournalExistsError): number | undefined {
  try {
    if (storage.route.nameUnnamedFile === undefined) throw new Error('this route cannot name a reserved file');
    storage.route.nameUnnamedFile(fd, storage.governedDirFd, name);
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    if (errorText(err) === 'EEXIST') throw exists();
    return undefined;
  }
}

/** Terminal error messages are cut to this many characters so the terminal record always fits a line. */
const TERMINAL_MESSAGE_MAX_CHARS = 4096;

/** What the writer appends: a run's record, or a bare event (entry iteration 1). */
export type WriterRecord = RunRecord | Record<string, unknown>;

function isRunRecord(record: WriterRecord): record is RunRecord {
  const keys = Object.keys(record);
  return keys.length === 2 && typeof record.iteration === 'number' && typeof record.event === 'object' && record.event !== null;
}

/** The record's event and its entry's iteration. */
function entryParts(record: WriterRecord): { iteration: number; event: Record<string, unknown> } {
  return isRunRecord(record) ? { iteration: record.iteration, event: record.event } : { iteration: 1, event: record };
}

/**
 * A terminal Error message as the writer signs it: cut to TERMINAL_MESSAGE_MAX_CHARS, and well-formed
 * (a cut, or a quoted value, can leave an unpaired surrogate, which would make the record unsignable).
 */
function terminalMessage(message: string): string {
  return message.slice(0, TERMINAL_MESSAGE_MAX_CHARS).toWellFormed();
}

/** A Terminated record with its Error message made a terminalMessage. */
function boundedTerminal(record: RunRecord): RunRecord {
  const event = record.event as { Terminated?: { reason: unknown } };
  const fields = event.Terminated;
  if (fields === undefined) throw new JournalWriteError('the terminal record must be a Terminated event');
  const reason = fields.reason as { Error?: { message?: unknown } } | string;
  if (typeof reason === 'object' && typeof reason.Error?.message === 'string') {
    const message = terminalMessage(reason.Error.message);
    if (message === reason.Error.message) return record;
    return {
      iteration: record.iteration,
      event: { Terminated: { ...fields, reason: { Error: { message } } } } as unknown as RunRecord['event'],
    };
  }
  return record;
}

/**
 * One sync on libuv's thread pool that a stopped run can finish at once in its own thread.
 * Under load the pool's queue holds many runs' syncs, so a cancelled run's pending sync could
 * wait tens of milliseconds for its turn; finishNow() makes the same call synchronously and
 * settles `done`. `returned` settles when the pool's call has come back, so the descriptor is
 * not closed while the pool may still use it.
 */
class PoolSync {
  readonly done: Promise<void>;
  readonly returned: Promise<void>;
  private settle!: (err: unknown) => void;

  constructor(
    private readonly fd: number,
    private readonly kind: 'fdatasync' | 'fsync',
  ) {
    let settled = false;
    this.done = new Promise((resolve, reject) => {
      this.settle = (err) => {
        if (settled) return;
        settled = true;
        // oxlint-disable-next-line typescript/prefer-promise-reject-errors -- the sync's own error, passed on unchanged
        if (err) reject(err);
        else resolve();
      };
    });
    this.returned = new Promise((resolve) => {
      fs[kind](fd, (err) => {
        this.settle(err);
        resolve();
      });
    });
  }

  finishNow(): void {
    try {
      if (this.kind === 'fdatasync') fs.fdatasyncSync(this.fd);
      else fs.fsyncSync(this.fd);
      this.settle(undefined);
    } catch (err) {
      this.settle(err);
    }
  }
}

function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(err);
}

export class JournalWriter {
  private sequence = 0;
  private previousHash = GENESIS_PREVIOUS_HASH;
  private expectedSize = 0;
  /** Set once the file can no longer be trusted to hold exactly our chain; effect appends then fail. */
  private broken: string | undefined;
  private terminated = false;
  /** The first durable record with an unconfirmed outcome (symbiont-writer-rule.ts), once there is one. */
  private unconfirmedAt: number | undefined;
  private closed = false;
  /** The new journal's directory sync, started at creation; the first append waits for it. Settles with the error code of a failure. */
  private directorySynced: Promise<string | undefined> | undefined;
  /** Where this writer created its journal, so the file can be removed if its first records never become durable. */
  private createdAt: { route: DescriptorRoute; dirFd: number; name: string } | undefined;
  /** Set when a failed write left bytes that could not be cut back: nothing may follow them. */
  private unverifiedTail: string | undefined;
  private removed = false;
  /** The append in progress, if any: the next one starts after it settles. */
  private inFlight: Promise<void> = Promise.resolve();

  private constructor(
    private readonly fd: number,
    private readonly signer: AuditStorage['signingKey'],
    readonly runId: string,
    readonly agentId: string,
    /** Absolute path for display in the audit reference. */
    readonly path: string,
  ) {}

  /**
   * Creates `<agentId>.<runId>.jsonl` exclusively (mode 0600, no symlink followed) in the governed
   * directory. Given `reservedFd`, an unnamed file made ahead of the run
   * (reserveJournalFile), it names that file instead of creating one, and closes it
   * if it cannot (then `usedReservedFile` is false and the journal is created anew).
   * `syncInThread` says, at each append, whether to sync in this thread rather than on
   * libuv's pool (see writeRecords); without it, appends sync on the pool.
   */
  static async create(storage: AuditStorage, runId: string, agentId: string, options: JournalOptions = {}): Promise<JournalWriter> {
    // Before the name exists: a run cancelled while it waits has no journal, and its owner claims it.
    const turn = options.stopSignal === undefined || options.syncInThread?.() === true ? undefined : await journalTurns.take(options.stopSignal);
    try {
      const writer = JournalWriter.createNamed(storage, runId, agentId, options);
      writer.heldTurn = turn;
      return writer;
    } catch (err) {
      turn?.();
      throw err;
    }
  }

  private static createNamed(storage: AuditStorage, runId: string, agentId: string, options: JournalOptions): JournalWriter {
    const { reservedFd } = options;
    let journal: { name: string; shown: string };
    try {
      journal = journalName(storage, runId, agentId);
    } catch (err) {
      if (reservedFd !== undefined) fs.closeSync(reservedFd);
      throw err;
    }
    const { name, shown } = journal;
    const exists = (): JournalExistsError => new JournalExistsError(`${shown}: a journal for this run already exists; journals are never reused`);
    let fd = reservedFd === undefined ? undefined : nameReservedFile(storage, reservedFd, name, exists);
    const usedReservedFile = fd !== undefined;
    if (fd === undefined) {
      try {
        const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_APPEND } = storage.route.flags;
        fd = storage.route.openAt(storage.governedDirFd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND, JOURNAL_FILE_MODE);
      } catch (err) {
        if (errorText(err) === 'EEXIST') throw exists();
        throw new JournalWriteError(`${shown}: cannot create the journal: ${describeStorageFailure(err)}`);
      }
    }
    const writer = new JournalWriter(fd, storage.signingKey, runId, agentId, shown);
    writer.usedReservedFile = usedReservedFile;
    if (options.syncInThread !== undefined) writer.syncInThread = options.syncInThread;
    writer.handover = options.handover;
    writer.stopSignal = options.stopSignal;
    writer.stopSignal?.addEventListener('abort', writer.finishPendingSyncsNow, { once: true });
    writer.createdAt = { route: storage.route, dirFd: storage.governedDirFd, name };
    try {
      // The umask may only have removed bits; make the mode exact (a reserved file's was made exact when it was reserved).
      if (!usedReservedFile) fs.fchmodSync(fd, JOURNAL_FILE_MODE);
    } catch (err) {
      writer.removeOwnFile();
      fs.closeSync(fd);
      throw new JournalWriteError(`${shown}: cannot secure the new journal (${errorText(err)}); it was removed`);
    }
    // The new directory entry must survive a crash as well. Its sync starts now, on libuv's
    // pool, while the first records are built and signed, and the first append waits for it
    // (writeRecords). The caller keeps the directory open for the writer's life.
    writer.directorySynced =
      options.urgent === true || writer.stopped
        ? Promise.resolve(syncDirectoryEntryNow(storage.governedDirFd))
        : writer.syncDirectoryEntry(storage.governedDirFd);
    return writer;
  }

  /**
   * Reopens an existing journal whose writer is gone (for instance its worker
   * died) so the run's owner can finish it. The chain on disk is verified
   * with the project key first; a journal that fails verification, already
   * ends with Terminated, ends in a partial line, or belongs to another
   * principal is not resumed.
   */
  // oxlint-disable-next-line typescript/require-await -- async so that a refusal reaches the caller as a rejection, not a synchronous throw
  static async resume(storage: AuditStorage, runId: string, agentId: string): Promise<JournalWriter> {
    const { name, shown } = journalName(storage, runId, agentId);
    let fd: number;
    try {
      const { O_RDWR, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = storage.route.flags;
      fd = storage.route.openAt(storage.governedDirFd, name, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      const code = errorText(err);
      if (code === 'ENOENT') throw new JournalWriteError(`${shown}: there is no journal to resume`);
      if (code === 'ELOOP' || code === 'EMLINK') throw new JournalWriteError(`${shown}: is a symlink; not resumed`);
      throw new JournalWriteError(`${shown}: cannot open the journal (${code})`);
    }
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) throw new JournalWriteError(`${shown}: is not a regular file; not resumed`);
      const linked = hardLinkProblem(stat);
      if (linked !== undefined) throw new JournalWriteError(`${shown}: ${linked}; not resumed`);
      if (stat.size > JOURNAL_FILE_MAX_BYTES) throw new JournalWriteError(`${shown}: is larger than ${JOURNAL_FILE_MAX_BYTES} bytes; not resumed`);
      const bytes = Buffer.alloc(stat.size);
      let filled = 0;
      while (filled < bytes.length) {
        const n = fs.readSync(fd, bytes, filled, bytes.length - filled, filled);
        if (n === 0) break;
        filled += n;
      }
      const { report, exitCode, chainEnd } = inspectJournalBytes(bytes.subarray(0, filled), shown, runId, storage.signingKey.publicKeyHex);
      if (exitCode === 1) throw new JournalWriteError(`${shown}: not resumed: ${report.error?.message ?? 'verification failed'}`);
      if (report.terminal_reason !== null) throw new JournalWriteError(`${shown}: already has its Terminated record`);
      // A Terminated record is never written into a journal without a durable Started record.
      if (!chainEnd.beginsWithStarted) throw new JournalWriteError(`${shown}: does not begin with a Started record; not resumed`);
      if (report.unverified_tail_bytes > 0) {
        throw new JournalWriteError(`${shown}: ends in an unauthenticated fragment of ${report.unverified_tail_bytes} bytes; not resumed`);
      }
      if (report.agent_id !== null && report.agent_id !== agentId) {
        throw new JournalWriteError(`${shown}: records principal ${report.agent_id}, not ${agentId}; not resumed`);
      }
      const writer = new JournalWriter(fd, storage.signingKey, runId, agentId, shown);
      writer.sequence = chainEnd.nextSequence;
      writer.previousHash = chainEnd.previousHash;
      writer.expectedSize = chainEnd.verifiedBytes;
      // A provider call finished with an error is an unconfirmed outcome: nothing effect-starting may follow it.
      const unconfirmed = report.effects.find(
        (effect) => effect.identity.kind === 'direct_inference' && effect.finish_sequence !== null && effect.outcome === 'unknown',
      );
      writer.unconfirmedAt = unconfirmed?.finish_sequence ?? undefined;
      writer.unfinishedCalls = report.effects.flatMap((effect) =>
        effect.finish_sequence === null && effect.identity.kind === 'direct_inference' ? [effect.identity.call_id] : [],
      );
      writer.resumed = { format: report.record_format, budget: chainEnd.budget, startedAtMs: chainEnd.startedAtMs };
      return writer;
    } catch (err) {
      fs.closeSync(fd);
      if (err instanceof JournalWriteError) throw err;
      throw new JournalWriteError(`${shown}: cannot read the journal to resume it (${errorText(err)})`);
    }
  }

  /** Whether create() named the reserved file it was given (false when it had to create the journal itself). */
  usedReservedFile = false;

  private syncInThread: () => boolean = () => false;

  private handover: JournalHandover | undefined;

  /** The run's stop signal (JournalOptions.stopSignal). */
  private stopSignal: AbortSignal | undefined;

  private get stopped(): boolean {
    return this.stopSignal?.aborted === true;
  }

  /** The turn create() took before naming the journal, for the first write. */
  private heldTurn: ReleaseTurn | undefined;

  /** Provider calls requested but never finished in the journal this writer resumed (empty for a new journal). */
  unfinishedCalls: string[] = [];

  /** What a resumed journal's records leave: its format, the route's budget (Symbiont's format) and when it started. */
  resumed: { format: string | null; budget: RunBudget | undefined; startedAtMs: number | undefined } | undefined;

  /** Number of records written so far. */
  get records(): number {
    return this.sequence;
  }

  /** True once the writer removed its journal because the first records could not be made durable: the run has no journal. */
  get journalRemoved(): boolean {
    return this.removed;
  }

  /**
   * Appends one effect record: `event` is `{ EventName: { ...fields } }`.
   * Resolves once the line is durable. Throws JournalWriteError otherwise.
   */
  async append(event: WriterRecord): Promise<void> {
    await this.appendAll([event]);
  }

  /**
   * Appends several effect records with one write and one sync; resolves once
   * all of them are durable. Used where the protocol only needs a group to be
   * durable before the next step (the response records, before the policy runs).
   */
  async appendAll(events: readonly WriterRecord[]): Promise<void> {
    await this.oneAtATime(async () => {
      this.checkOpen();
      this.checkEffects(events);
      await this.writeRecords(events);
    });
  }

  /**
   * Appends the Terminated record, optionally preceded by effect records
   * written and synced together with it. Without preceding records it is
   * attempted even after an effect append failed or the file was tampered
   * with; resolves once it is durable.
   */
  async appendTerminal(terminal: TerminalReason | RunRecord, preceding: readonly WriterRecord[] = [], options: { urgent?: boolean } = {}): Promise<void> {
    await this.oneAtATime(() => this.writeTerminal(terminal, preceding, options.urgent === true), options.urgent === true);
  }

  private async writeTerminal(terminal: TerminalReason | RunRecord, preceding: readonly WriterRecord[], urgent: boolean): Promise<void> {
    this.checkOpen();
    let last: WriterRecord;
    if (terminal === 'Completed') last = { [TERMINATED_EVENT]: { reason: 'Completed' } };
    else if (terminal !== null && typeof terminal === 'object' && 'Error' in terminal && typeof terminal.Error?.message === 'string') {
      last = { [TERMINATED_EVENT]: { reason: { Error: { message: terminalMessage(terminal.Error.message) } } } };
    } else if (terminal !== null && typeof terminal === 'object' && isRunRecord(terminal)) {
      last = boundedTerminal(terminal);
    } else {
      throw new JournalWriteError('a terminal reason is "Completed", { Error: { message: string } } or a Terminated record');
    }
    // The terminal record itself starts nothing, so the writer rule is checked on what precedes it.
    if (preceding.length > 0) this.checkEffects(preceding);
    else if (this.sequence === 0) throw new JournalWriteError(`${this.path}: a Terminated record needs a durable Started record before it`);
    // Record the tampering if we see it, but write anyway: this is the last word on the run.
    else this.checkFileEnd();
    await this.writeRecords([...preceding, last], urgent);
    this.terminated = true;
  }

  /**
   * Symbiont's writer rule over a group about to be written after the durable records: no record that
   * starts an effect once one with an unconfirmed outcome is written (symbiont-writer-rule.ts).
   */
  private checkWriterRule(events: readonly WriterRecord[]): void {
    let unconfirmedAt = this.unconfirmedAt;
    events.forEach((record, index) => {
      const { event } = entryParts(record);
      const name = Object.keys(event)[0]!;
      if (unconfirmedAt !== undefined && startsEffect(name)) {
        throw new JournalWriteError(`${this.path}: ${name} refused after record ${unconfirmedAt}: ${UNCONFIRMED_OUTCOME_REFUSAL}`);
      }
      if (unconfirmedAt === undefined && hasUnconfirmedOutcome(name, event[name] as Record<string, unknown>)) unconfirmedAt = this.sequence + index;
    });
  }

  /** A method, not an inline check, so TypeScript does not narrow `broken` across the checkFileEnd() that may set it. */
  private refuseIfBroken(): void {
    if (this.broken !== undefined) throw new JournalWriteError(`${this.path}: ${this.broken}; no further records are written`);
  }

  /** Checks a group of effect records may be written now (order rules, an intact file). */
  private checkEffects(events: readonly WriterRecord[]): void {
    if (events.length === 0) throw new JournalWriteError('no records to append');
    events.forEach((record, index) => {
      const name = checkEvent(entryParts(record).event);
      if (name === TERMINATED_EVENT) throw new JournalWriteError('the Terminated record is written with appendTerminal');
      if (this.sequence + index === 0 && name !== STARTED_EVENT) {
        throw new JournalWriteError(`the first record of a journal must be Started, not ${name}`);
      }
    });
    this.checkWriterRule(events);
    this.refuseIfBroken();
    this.checkFileEnd();
    this.refuseIfBroken();
  }

  /** Runs `step` after every earlier append has settled; its failure does not block later steps. */
  private oneAtATime(step: () => Promise<void>, urgent = false): Promise<void> {
    const run = this.inFlight.then(async () => {
      const release = await this.takeTurn(urgent);
      try {
        await this.whileHolding(step);
      } finally {
        release?.();
      }
    });
    this.inFlight = run.catch(() => undefined);
    return run;
  }

  /** Waits, with the journal still open to the owner, until this thread lets the write go to the disk. */
  private async takeTurn(urgent: boolean): Promise<ReleaseTurn | undefined> {
    const held = this.heldTurn;
    this.heldTurn = undefined;
    if (held !== undefined) return held;
    if (this.stopSignal === undefined || urgent || this.syncInThread()) return undefined;
    return journalTurns.take(this.stopSignal);
  }

  /** Runs an append's checks and write with the journal held from the run's owner (journal-handover.ts). */
  private async whileHolding(step: () => Promise<void>): Promise<void> {
    const handover = this.handover;
    if (handover === undefined) return step();
    if (!handover.beginWrite()) throw new JournalTakenError(`${this.path}: the run's owner has taken the journal to end the run`);
    try {
      await step();
    } finally {
      // The owner may end the run from here only when the file is exactly this writer's durable chain.
      const trusted = this.sequence > 0 && this.broken === undefined && this.unverifiedTail === undefined && !this.removed;
      handover.endWrite(this.terminated ? 'ended' : trusted ? 'open' : 'busy');
    }
  }

  /** The syncs of this journal still on libuv's pool (PoolSync). */
  private readonly poolSyncs = new Set<PoolSync>();

  private async syncOnPool(fd: number, kind: 'fdatasync' | 'fsync'): Promise<void> {
    const sync = new PoolSync(fd, kind);
    this.poolSyncs.add(sync);
    void sync.returned.then(() => this.poolSyncs.delete(sync));
    await sync.done;
  }

  /**
   * The run has stopped (a cancel or its deadline): finishes its syncs still waiting on libuv's
   * pool here and now, so its terminal record, which waits for them, is not held up behind
   * other runs' syncs.
   */
  private readonly finishPendingSyncsNow = (): void => {
    for (const sync of this.poolSyncs) sync.finishNow();
  };

  async close(): Promise<void> {
    this.stopSignal?.removeEventListener('abort', this.finishPendingSyncsNow);
    this.heldTurn?.();
    this.heldTurn = undefined;
    await this.inFlight;
    await Promise.all([...this.poolSyncs].map((sync) => sync.returned));
    if (this.closed) return;
    this.closed = true;
    try {
      fs.closeSync(this.fd);
    } catch {
      // nothing more can be lost here: every record was synced before its append resolved
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new JournalWriteError(`${this.path}: the journal writer is closed`);
    if (this.removed) throw new JournalWriteError(`${this.path}: the journal was removed after its first records failed; nothing more is written`);
    // Bytes after a partial line would turn it into a complete, invalid record.
    if (this.unverifiedTail !== undefined) throw new JournalWriteError(`${this.path}: ${this.unverifiedTail}; nothing more is written`);
    // A record after Terminated would make the run's end ambiguous.
    if (this.terminated) {
      throw new JournalWriteError(`${this.path}: the journal already has its Terminated record`);
    }
  }

  private checkFileEnd(): void {
    let size: number;
    try {
      size = fs.fstatSync(this.fd).size;
    } catch (err) {
      this.broken ??= `cannot check the journal's size (${errorText(err)})`;
      return;
    }
    if (size !== this.expectedSize && this.broken === undefined) {
      this.broken =
        size > this.expectedSize
          ? `${size - this.expectedSize} foreign bytes were added after record ${this.sequence - 1}`
          : `the journal was truncated to ${size} bytes (expected ${this.expectedSize})`;
    }
  }

  /**
   * Signs and chains `events`, writes them in one write, then syncs once; chain state advances only when durable.
   * The sync runs on libuv's pool, where concurrent runs' syncs overlap and the file system commits them
   * together, or in this thread, which saves the two thread hops of a pooled sync (measured in
   * docs/benchmarks.md): when the owner says so (syncInThread: no other run needs this
   * thread), and always when `urgent` or once the run has stopped, for a stopped run's records,
   * which a cancel waits for and which on the pool would queue behind other runs' syncs.
   */
  private async writeRecords(events: readonly WriterRecord[], urgent = false): Promise<void> {
    const inThread = urgent || this.stopped || this.syncInThread();
    let sequence = this.sequence;
    let previousHash = this.previousHash;
    const lines: Buffer[] = [];
    for (const record of events) {
      const { iteration, event } = entryParts(record);
      let payloadText: string;
      try {
        payloadText = canonicalJson({
          version: JOURNAL_FORMAT_VERSION,
          run_id: this.runId,
          previous_hash: previousHash,
          entry: {
            sequence,
            timestamp: new Date().toISOString(),
            agent_id: this.agentId,
            iteration,
            event,
          },
        });
      } catch (err) {
        throw new JournalWriteError(`the record cannot be expressed as JSON (${(err as Error).message})`);
      }
      // The one check before the signature: nothing is signed that `audit inspect` (or Symbiont's
      // types) would refuse, whatever a provider put in it. The group is refused whole, unwritten.
      const problem = unsignableProblem(payloadText, isRunRecord(record));
      if (problem !== undefined) {
        throw new JournalWriteError(`record ${sequence} (${Object.keys(event)[0]}) would not verify, so it was not signed: ${problem}`);
      }
      const payload = Buffer.from(payloadText, 'utf8');
      const line = encodeRecordLine(payload, this.signer.sign(payload));
      if (line.length > JOURNAL_LINE_MAX_BYTES) {
        throw new JournalWriteError(`the record is ${line.length} bytes; a journal line is at most ${JOURNAL_LINE_MAX_BYTES} bytes`);
      }
      lines.push(line);
      previousHash = sha256Hex(line);
      sequence += 1;
    }
    const bytes = lines.length === 1 ? lines[0]! : Buffer.concat(lines);
    // A new journal's directory entry must be durable with its first records; its sync, started
    // when the file was named, is awaited here, and its failure only once the records' own outcome is known.
    const directorySynced = this.directorySynced;
    this.directorySynced = undefined;
    let written = 0;
    try {
      while (written < bytes.length) written += fs.writeSync(this.fd, bytes, written, bytes.length - written);
      if (inThread) fs.fdatasyncSync(this.fd);
      else await this.syncOnPool(this.fd, 'fdatasync');
    } catch (err) {
      await directorySynced;
      throw this.failedWrite(err, events.length);
    }
    events.forEach((record, index) => {
      const { event } = entryParts(record);
      const name = Object.keys(event)[0]!;
      if (this.unconfirmedAt === undefined && hasUnconfirmedOutcome(name, event[name] as Record<string, unknown>)) this.unconfirmedAt = this.sequence + index;
    });
    this.expectedSize += bytes.length;
    this.previousHash = previousHash;
    this.sequence = sequence;
    const directoryFailure = await directorySynced;
    if (directoryFailure !== undefined) {
      this.broken ??= `the journal's directory entry could not be made durable (${directoryFailure})`;
      throw new JournalWriteError(`${this.path}: cannot make the new journal's directory entry durable (${directoryFailure})`);
    }
  }

  /**
   * After a failed write or sync the bytes past the last durable record are
   * unknown. Cut them off, so the file is again exactly the verified chain; if
   * that fails, they stay as an unverified tail that nothing may follow. A
   * journal whose first records failed is removed instead (see the top).
   */
  private failedWrite(err: unknown, count: number): JournalWriteError {
    const first = this.sequence;
    const which = count === 1 ? `record ${first}` : `records ${first}-${first + count - 1}`;
    const cause = `${this.path}: ${describeStorageFailure(err)}: ${which} could not be made durable`;
    if (first === 0 && this.createdAt !== undefined) {
      const removed = this.removeOwnFile();
      this.removed = true;
      return new JournalWriteError(
        removed ? `${cause}, so no journal was kept for this run (the file was removed)` : `${cause}, and the partial journal could not be removed`,
      );
    }
    try {
      fs.ftruncateSync(this.fd, this.expectedSize);
      fs.fdatasyncSync(this.fd);
    } catch (cutErr) {
      this.unverifiedTail = `a failed write left an unverified tail after record ${first - 1} that could not be cut back (${errorText(cutErr)})`;
      return new JournalWriteError(`${cause}; the journal ends in an unverified tail after record ${first - 1}`);
    }
    return new JournalWriteError(`${cause}; the journal still ends with record ${first - 1}`);
  }

  /**
   * Removes the journal this writer created, provided the name still refers to
   * our file, and makes the removal durable as far as the file system allows.
   * Removing a file needs no free space. Returns whether the file is gone.
   */
  private removeOwnFile(): boolean {
    const created = this.createdAt;
    if (created === undefined) return false;
    try {
      const ours = fs.fstatSync(this.fd);
      const named = entryIdentityAt(created.route, created.dirFd, created.name);
      if (named === undefined || ours.dev !== named.dev || ours.ino !== named.ino) return false;
      created.route.unlinkAt(created.dirFd, created.name);
    } catch {
      return false;
    }
    try {
      fs.fsyncSync(created.dirFd);
    } catch {
      // The entry is gone now; a crash before the directory reaches the disk can bring back an empty file at worst.
    }
    return true;
  }

  /**
   * Makes a new journal's directory entry durable, on libuv's pool: started as soon as the file
   * has its name, it overlaps building and signing the first records (measured in
   * docs/benchmarks.md). Settles with the failure's code rather than rejecting, so it is never left unhandled.
   */
  private async syncDirectoryEntry(dirFd: number): Promise<string | undefined> {
    try {
      await this.syncOnPool(dirFd, 'fsync');
    } catch (err) {
      return directorySyncFailure(err);
    }
    return undefined;
  }
}

/** syncDirectoryEntry in this thread, for an urgent journal. */
function syncDirectoryEntryNow(dirFd: number): string | undefined {
  try {
    fs.fsyncSync(dirFd);
  } catch (err) {
    return directorySyncFailure(err);
  }
  return undefined;
}

/** EINVAL: the file system cannot sync directories; the records themselves are synced. */
function directorySyncFailure(err: unknown): string | undefined {
  return errorText(err) === 'EINVAL' ? undefined : errorText(err);
}

/** The journal's file name for a run, after checking both ids (which also rules out path tricks). */
function journalName(storage: AuditStorage, runId: string, agentId: string): { name: string; shown: string } {
  if (!isCanonicalUuid(runId)) throw new JournalWriteError(`run id ${JSON.stringify(String(runId)).slice(0, 80)} is not a lowercase UUID`);
  if (!isCanonicalUuid(agentId)) throw new JournalWriteError(`agent id ${JSON.stringify(String(agentId)).slice(0, 80)} is not a lowercase UUID`);
  // As Symbiont's run_audit.rs names a run's journal: <agent_id>.<run_id>.jsonl.
  const name = `${agentId}.${runId}${JOURNAL_FILE_SUFFIX}`;
  return { name, shown: `${storage.governedPath}/${name}` };
}

/** Returns the event's name after checking it has the `{ Name: { ...fields } }` shape. */
function checkEvent(event: Record<string, unknown>): string {
  if (!isRecord(event)) {
    throw new JournalWriteError('an event is an object with exactly one key, the event name');
  }
  const keys = Object.keys(event);
  if (keys.length !== 1) throw new JournalWriteError(`an event has exactly one key, the event name; got ${keys.length}`);
  const name = keys[0]!;
  const fields = event[name];
  if (!isRecord(fields)) {
    throw new JournalWriteError(`the fields of event ${name} must be an object`);
  }
  return name;
}

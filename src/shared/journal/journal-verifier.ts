import { RunEndingReader, type RunEnding } from './run-ending.js';
import { createRequire } from 'node:module';
import type { KeyObject } from 'node:crypto';
import { sha256Hex } from '../canonical-json.js';
import { JOURNAL_FILE_MAX_BYTES, JOURNAL_LINE_MAX_BYTES, JOURNAL_TRACKED_OPERATIONS_MAX } from '../limits.js';
import { decodeUtf8Strict } from '../confinement/index.js';
import {
  FINISHED_EVENT,
  GENESIS_PREVIOUS_HASH,
  JOURNAL_FORMAT_VERSION,
  NEWLINE,
  REQUESTED_EVENT,
  RESPONSE_EVENT,
  STARTED_EVENT,
  TERMINATED_EVENT,
  type TerminalReason,
} from './journal-format.js';
import { readJournalFile, JournalFileRefusal } from './journal-file-reader.js';
import { isCanonicalUuid } from '../text/uuid.js';
import { cutRecordLine } from './journal-line.js';
import { publicKeyFromHex, publicKeyHexProblem, verifyWithNodeCrypto } from '../signing/signing-key.js';
import { ed25519SignatureProblem } from '../signing/ed25519-key-checks.js';
import { parseStrictJson, StrictJsonError } from '../text/strict-json.js';
import {
  ENTRY_FIELDS,
  eventProblem,
  isHex64,
  journalNumberProblem,
  LEGACY_FORMAT,
  PAYLOAD_FIELDS,
  type RecordFormat,
  unknownKeyProblem,
} from './journal-record-rules.js';
import { ENTRY_ITERATION_ZERO, RECORDS, SYMBIONT_FORMAT } from './journal-records.js';
import { RunBudget, type SettlementOutcome } from './run-records.js';
import { isRecord } from '../json-value.js';

// The read-only verifier behind `symbi audit inspect`. It checks every
// complete line (signature over the exact embedded payload bytes, hash chain,
// sequence, run id, one principal, event order) and reports what the journal
// establishes. It never repairs, truncates or appends.
//
// The verdicts and the report's field names follow Symbiont's documentation
// of the same command (docs/crash-inspection.md in the Symbiont repository):
// a final fragment without a newline is counted as `unverified_tail_bytes`
// and always needs reconciliation, wherever it stands; each tracked operation
// (here: each direct provider call) is an `effects` row whose outcome is
// `result_recorded` only when a finish with a Completed reason and a response
// hash was recorded, and `unknown` otherwise, because an error or a cancel
// cannot show that the request had no effect; a journal with no signed record
// at all fails, as Symbiont's verifier does.
//
// One meaning per record: a payload is read with the strict reader
// (strict-json.ts: no duplicate key at any depth, nesting bounded), every
// number must be written as the writer writes it, and every event and field
// must be one the format defines (journal-record-rules.ts). The public key and
// each signature are refused first when libsodium would refuse them
// (ed25519-key-checks.ts), since OpenSSL and tweetnacl accept weak ones.
//
// Hostile input: lines and the file are size-checked before parsing, UTF-8 is
// decoded strictly, and nothing parsed from the file is re-serialised except
// values checked to be flat strings.

type Nacl = { sign: { detached: { verify(msg: Uint8Array, sig: Uint8Array, publicKey: Uint8Array): boolean } } };
const nacl = createRequire(import.meta.url)('tweetnacl') as Nacl;

export type InspectVerdict = 'complete' | 'requires_reconciliation' | 'failed';

/** One tracked operation, as Symbiont's `effects` rows name it. */
export interface EffectRow {
  /** A provider call (DirectInferenceRequested), or a token reservation of the route's budget (BudgetReservationStarted). */
  identity: { kind: 'direct_inference'; call_id: string } | { kind: 'shared_inference'; reservation_id: string };
  /** Sequence of the record that started it. */
  start_sequence: number;
  /** Sequence of the record that finished it (DirectInferenceFinished, BudgetReservationFinished), or null when none was recorded. */
  finish_sequence: number | null;
  /**
   * `result_recorded`: a provider call's Completed finish with a response hash, or any settlement of
   * a reservation; `unknown`: no finish, or a provider call that ended in an error or a cancel.
   */
  outcome: 'result_recorded' | 'unknown';
  details: { operation: string | null; provider: string | null; model: string | null; request_hash: string | null };
}

/** Which records the journal holds: Symbiont's response route, or this server's earlier 0.1 format. */
export type RecordFormatName = RecordFormat['name'];

export interface InspectReport {
  journal: string;
  run_id: string;
  public_key: string;
  verdict: InspectVerdict;
  /** `symbiont-response-route`, or `symbi-mcp-0.1` for a journal written by an earlier version of this server; null with no record. */
  record_format: RecordFormatName | null;
  journal_complete: boolean;
  requires_reconciliation: boolean;
  terminal_reason: TerminalReason | null;
  /** How the run ended, read from its verified records (run-ending.ts); null when verification failed. */
  ending: RunEnding | null;
  /** Complete records that verified (all of them unless verification failed). */
  verified_records: number;
  /** Bytes covered by those records. */
  verified_bytes: number;
  unverified_tail_bytes: number;
  /** The same count as verified_records (this project's earlier name, kept). */
  records: number;
  agent_id: string | null;
  agent_name: string | null;
  /** Timestamp of the Started record, null when the journal has none. */
  started_at: string | null;
  last_event: string | null;
  last_timestamp: string | null;
  effects: EffectRow[];
  /** Why reconciliation is needed, one sentence each (empty when it is not). */
  warnings: string[];
  /** True when every signature was also verified with tweetnacl and both implementations agreed. */
  cross_checked: boolean;
  error?: { line: number | null; message: string };
}

export interface InspectOptions {
  /** Also verify every signature with tweetnacl and fail if the two implementations disagree. */
  crossCheck?: boolean;
  /** Opens the journal (read-only, no symlink followed) through a confinement route instead of by path. */
  open?: () => number;
  /** A larger journal is refused before it is read (default and ceiling: JOURNAL_FILE_MAX_BYTES). */
  maxBytes?: number;
  /** Verification stops, and fails, once this many milliseconds have passed (performance.now() based). */
  timeLimitMs?: number;
  /** Called as records verify, at most every PROGRESS_EVERY_RECORDS records, with bytes verified and bytes in all. */
  onProgress?: (verifiedBytes: number, totalBytes: number) => void;
  /** Called once before a cross-check starts: the records to check and tweetnacl's measured milliseconds per signature. */
  onCrossCheckEstimate?: (records: number, msPerSignature: number) => void;
}

const PROGRESS_EVERY_RECORDS = 8;
/** Signatures timed with tweetnacl to measure its rate before a cross-check (each costs milliseconds). */
const CROSS_CHECK_SAMPLE = 6;
const CROSS_CHECK_WARM_UP = 2;

// The writer's payloads nest six levels deep; a little room, and no more.
const PAYLOAD_MAX_DEPTH = 16;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

class LineFailure extends Error {
  constructor(
    readonly line: number | null,
    message: string,
  ) {
    super(message);
  }
}

function flatString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function terminalReasonOf(fields: Record<string, unknown>, format: RecordFormat): TerminalReason | null {
  const reason = fields.reason;
  // Symbiont's reasons were checked against their declaration already (journal-records.ts).
  if (format === SYMBIONT_FORMAT) return reason as TerminalReason;
  if (reason === 'Completed') return 'Completed';
  if (isRecord(reason) && Object.keys(reason).length === 1 && isRecord(reason.Error)) {
    const message = reason.Error.message;
    if (typeof message === 'string') return { Error: { message } };
  }
  return null;
}

function emptyReport(journal: string, runId: string, publicKeyHex: string): InspectReport {
  return {
    journal,
    run_id: runId,
    public_key: publicKeyHex,
    verdict: 'failed',
    record_format: null,
    journal_complete: false,
    requires_reconciliation: false,
    terminal_reason: null,
    ending: null,
    verified_records: 0,
    verified_bytes: 0,
    unverified_tail_bytes: 0,
    records: 0,
    agent_id: null,
    agent_name: null,
    started_at: null,
    last_event: null,
    last_timestamp: null,
    effects: [],
    warnings: [],
    cross_checked: false,
  };
}

/** Where the verified chain ends: what a writer continuing it needs. */
export interface ChainEnd {
  /** SHA-256 of the last complete line (64 zeros when there is none). */
  previousHash: string;
  /** The sequence number the next record takes. */
  nextSequence: number;
  /** Bytes covered by complete, verified lines. */
  verifiedBytes: number;
  /** Whether the first record is Started (a writer never continues a journal without one). */
  beginsWithStarted: boolean;
  /** The route's budget as the records leave it (Symbiont's format), for a writer that ends the run. */
  budget: RunBudget | undefined;
  /** When the Started record was written (milliseconds since the epoch), for the run's duration. */
  startedAtMs: number | undefined;
}

export interface InspectResult {
  report: InspectReport;
  exitCode: 0 | 1 | 2;
}

/** Verifies the journal at `filePath` for run `runId` against the raw Ed25519 public key `publicKeyHex`. */
export function inspectJournal(filePath: string, runId: string, publicKeyHex: string, options: InspectOptions = {}): InspectResult {
  let bytes: Buffer;
  try {
    bytes = readJournalFile(filePath, Math.min(options.maxBytes ?? JOURNAL_FILE_MAX_BYTES, JOURNAL_FILE_MAX_BYTES), options.open);
  } catch (err) {
    const message = err instanceof JournalFileRefusal ? err.message : `the journal cannot be read: ${(err as Error).message}`;
    return failedBeforeReading(filePath, runId, publicKeyHex, message);
  }
  const { report, exitCode } = inspectJournalBytes(bytes, filePath, runId, publicKeyHex, options);
  return { report, exitCode };
}

function failedBeforeReading(label: string, runId: string, publicKeyHex: string, message: string): InspectResult {
  const report = emptyReport(label, String(runId).toLowerCase(), String(publicKeyHex).toLowerCase());
  const checked = checkArguments(report);
  report.error = { line: null, message: checked ?? message };
  return { report, exitCode: 1 };
}

function checkArguments(report: InspectReport): string | undefined {
  if (!isCanonicalUuid(report.run_id)) return 'the run id must be a UUID (8-4-4-4-12 hexadecimal digits)';
  return publicKeyHexProblem(report.public_key);
}

/** Verifies journal bytes already read (`label` names them in the report); also says where the chain ends. */
export function inspectJournalBytes(
  bytes: Buffer,
  label: string,
  runId: string,
  publicKeyHex: string,
  options: InspectOptions = {},
): InspectResult & { chainEnd: ChainEnd } {
  const report = emptyReport(label, String(runId).toLowerCase(), String(publicKeyHex).toLowerCase());
  const chainEnd: ChainEnd = {
    previousHash: GENESIS_PREVIOUS_HASH,
    nextSequence: 0,
    verifiedBytes: 0,
    beginsWithStarted: false,
    budget: undefined,
    startedAtMs: undefined,
  };
  const fail = (line: number | null, message: string) => {
    report.verdict = 'failed';
    report.ending = null;
    report.journal_complete = false;
    report.requires_reconciliation = false;
    report.error = { line, message };
    return { report, exitCode: 1 as const, chainEnd };
  };
  const badArgument = checkArguments(report);
  if (badArgument !== undefined) return fail(null, badArgument);
  let publicKey: KeyObject;
  try {
    publicKey = publicKeyFromHex(report.public_key);
  } catch (err) {
    return fail(null, (err as Error).message);
  }
  try {
    verifyBytes(bytes, report, publicKey, options, chainEnd);
  } catch (err) {
    if (err instanceof LineFailure) return fail(err.line, err.message);
    // Defensive: any unexpected fault is a failed verification, never a crash.
    return fail(null, `verification stopped: ${(err as Error).message}`);
  }
  report.cross_checked = options.crossCheck === true;
  // As Symbiont's verifier: without one signed record there is nothing to inspect.
  if (report.records === 0) {
    return fail(
      null,
      report.unverified_tail_bytes > 0 ? 'the journal holds no signed record, only an unauthenticated fragment' : 'the journal holds no signed record',
    );
  }
  const startedFirst = chainEnd.beginsWithStarted;
  report.journal_complete = startedFirst && report.terminal_reason !== null && report.unverified_tail_bytes === 0;
  const warnings = report.warnings;
  if (!startedFirst) warnings.push('the journal does not begin with a signed Started record');
  if (report.terminal_reason === null) warnings.push('no Terminated record: the run may still be active, or was interrupted');
  if (report.unverified_tail_bytes > 0) {
    warnings.push(`a final fragment of ${report.unverified_tail_bytes} bytes without a newline is not authenticated (an interrupted write or tampering)`);
  }
  for (const effect of report.effects) {
    if (effect.outcome !== 'unknown') continue;
    if (effect.identity.kind === 'shared_inference') {
      warnings.push(`token reservation ${effect.identity.reservation_id} was never settled: its usage is unknown`);
      continue;
    }
    const call = effect.identity.call_id.slice(0, 128);
    warnings.push(
      effect.finish_sequence === null
        ? `provider call ${call} was requested but its finish was not recorded: its effect is unknown`
        : `provider call ${call} finished without a recorded result (an error or a cancel): its effect is unknown`,
    );
  }
  report.requires_reconciliation = !report.journal_complete || report.effects.some((effect) => effect.outcome === 'unknown');
  report.verdict = report.requires_reconciliation ? 'requires_reconciliation' : 'complete';
  return { report, exitCode: report.requires_reconciliation ? 2 : 0, chainEnd };
}

/** Times tweetnacl on the first complete lines, so a cross-check can say how long it will take before it starts. */
function estimateCrossCheck(bytes: Buffer, rawPublicKey: Buffer, report: (records: number, msPerSignature: number) => void): void {
  let records = 0;
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) records += 1;
  const sample: { payload: Buffer; signature: Buffer }[] = [];
  for (let start = 0; sample.length < Math.min(records, CROSS_CHECK_SAMPLE);) {
    const end = bytes.indexOf(NEWLINE, start);
    const cut = cutRecordLine(bytes.subarray(start, end));
    if (!cut.ok) break;
    sample.push(cut);
    start = end + 1;
  }
  // The first signatures also compile tweetnacl's code; the rate is taken from the others.
  const warmUp = sample.slice(0, CROSS_CHECK_WARM_UP);
  const timed = sample.slice(CROSS_CHECK_WARM_UP);
  for (const { payload, signature } of warmUp) nacl.sign.detached.verify(payload, signature, rawPublicKey);
  const began = performance.now();
  for (const { payload, signature } of timed) nacl.sign.detached.verify(payload, signature, rawPublicKey);
  report(records, timed.length === 0 ? 0 : (performance.now() - began) / timed.length);
}

function verifyBytes(bytes: Buffer, report: InspectReport, publicKey: KeyObject, options: InspectOptions, chainEnd: ChainEnd): void {
  const crossCheck = options.crossCheck === true;
  const rawPublicKey = Buffer.from(report.public_key, 'hex');
  if (crossCheck && options.onCrossCheckEstimate !== undefined) estimateCrossCheck(bytes, rawPublicKey, options.onCrossCheckEstimate);
  const stopAt = options.timeLimitMs === undefined ? Infinity : performance.now() + options.timeLimitMs;
  const calls = new Map<string, EffectRow & { response_recorded: boolean }>();
  const state: FormatState = { format: undefined, budget: undefined, reservations: new Map(), ending: new RunEndingReader() };
  let previousHash = GENESIS_PREVIOUS_HASH;
  let start = 0;
  let lineNumber = 0;
  while (start < bytes.length) {
    if (performance.now() >= stopAt) {
      throw new LineFailure(
        lineNumber + 1,
        `stopped at line ${lineNumber + 1}: the time limit of ${formatLimit(options.timeLimitMs!)} passed after ${report.records} verified records (${start} of ${bytes.length} bytes)`,
      );
    }
    if (options.onProgress !== undefined && report.records % PROGRESS_EVERY_RECORDS === 0 && report.records > 0) options.onProgress(start, bytes.length);
    lineNumber += 1;
    const end = bytes.indexOf(NEWLINE, start);
    if (end === -1) {
      checkTail(bytes.subarray(start), report, lineNumber);
      break;
    }
    const lineLength = end + 1 - start;
    if (lineLength > JOURNAL_LINE_MAX_BYTES) {
      throw new LineFailure(lineNumber, `line ${lineNumber} is ${lineLength} bytes; a journal line is at most ${JOURNAL_LINE_MAX_BYTES} bytes`);
    }
    const lineWithNewline = bytes.subarray(start, end + 1);
    const line = bytes.subarray(start, end);
    const at = `line ${lineNumber}`;
    const cut = cutRecordLine(line);
    if (!cut.ok) throw new LineFailure(lineNumber, `${at}: malformed line: ${cut.problem}`);

    const payload = verifiedPayload(cut, publicKey, rawPublicKey, crossCheck, lineNumber);
    if (payload.version !== JOURNAL_FORMAT_VERSION) {
      throw new LineFailure(lineNumber, `${at}: unsupported payload version (expected ${JOURNAL_FORMAT_VERSION})`);
    }
    if (payload.run_id !== report.run_id) {
      const other = isCanonicalUuid(payload.run_id) ? ` ${payload.run_id}` : '';
      throw new LineFailure(lineNumber, `${at}: other run: the record belongs to run${other}, not ${report.run_id}`);
    }
    if (!isHex64(payload.previous_hash)) {
      throw new LineFailure(lineNumber, `${at}: malformed line: previous_hash is not 64 lowercase hex characters`);
    }
    if (payload.previous_hash !== previousHash) {
      throw new LineFailure(
        lineNumber,
        lineNumber === 1
          ? `broken chain at line 1: previous_hash is not 64 zeros, so earlier records are missing`
          : `broken chain at line ${lineNumber}: previous_hash does not match the SHA-256 of line ${lineNumber - 1}`,
      );
    }
    const entry = payload.entry;
    if (!isRecord(entry)) throw new LineFailure(lineNumber, `${at}: malformed line: entry is not an object`);
    const entryExtra = unknownKeyProblem(entry, ENTRY_FIELDS, 'entry');
    if (entryExtra !== undefined) throw new LineFailure(lineNumber, `${at}: malformed line: ${entryExtra}`);
    if (entry.sequence !== report.records) {
      throw new LineFailure(
        lineNumber,
        `${at}: sequence gap: expected sequence ${report.records}, found ${typeof entry.sequence === 'number' ? entry.sequence : 'a non-number'}`,
      );
    }
    if (typeof entry.timestamp !== 'string' || !RFC3339.test(entry.timestamp)) {
      throw new LineFailure(lineNumber, `${at}: malformed line: timestamp is not an RFC 3339 time`);
    }
    if (!isCanonicalUuid(entry.agent_id)) throw new LineFailure(lineNumber, `${at}: malformed line: agent_id is not a lowercase UUID`);
    if (report.agent_id === null) report.agent_id = entry.agent_id;
    else if (entry.agent_id !== report.agent_id) {
      throw new LineFailure(lineNumber, `${at}: other principal: agent_id ${entry.agent_id} differs from ${report.agent_id} on line 1`);
    }
    const event = entry.event;
    if (!isRecord(event) || Object.keys(event).length !== 1) {
      throw new LineFailure(lineNumber, `${at}: malformed line: event is not an object with exactly one key`);
    }
    const name = Object.keys(event)[0]!;
    const fields = event[name];
    // The first record decides the format; every later record is held to it.
    state.format ??= formatOf(name, fields);
    report.record_format = state.format.name;
    const badEvent = eventProblem(state.format, name, fields);
    if (badEvent !== undefined) throw new LineFailure(lineNumber, `${at}: malformed line: ${badEvent}`);
    if (!isRecord(fields)) throw new LineFailure(lineNumber, `${at}: malformed line: the fields of ${name} are not an object`);
    const badIteration = iterationProblem(state.format, name, fields, entry.iteration);
    if (badIteration !== undefined) throw new LineFailure(lineNumber, `${at}: malformed line: ${badIteration}`);

    checkEventOrder(name, fields, report, calls, lineNumber, state);
    state.ending.observe(name, fields);
    if (name === STARTED_EVENT) chainEnd.startedAtMs = Date.parse(entry.timestamp);

    if (report.records === 0 && name === STARTED_EVENT) report.started_at = entry.timestamp;
    report.records += 1;
    report.verified_records = report.records;
    report.last_event = name;
    report.last_timestamp = entry.timestamp;
    previousHash = sha256Hex(lineWithNewline);
    start = end + 1;
    chainEnd.previousHash = previousHash;
    chainEnd.nextSequence = report.records;
    chainEnd.verifiedBytes = start;
    chainEnd.beginsWithStarted = report.started_at !== null;
    report.verified_bytes = start;
  }
  // Rows in the order their requests were recorded; the internal flag stays internal.
  const rows: EffectRow[] = [...calls.values()].map(({ response_recorded: _, ...row }) => row);
  report.effects = [...rows, ...state.reservations.values()].sort((a, b) => a.start_sequence - b.start_sequence);
  report.ending = state.ending.ending(report.terminal_reason);
  chainEnd.budget = state.budget;
}

/** A record line's signature checked (by tweetnacl too, for a cross-check), then its payload parsed: a JSON object of the payload's fields only. */
function verifiedPayload(
  cut: { payload: Buffer; signature: Buffer },
  publicKey: KeyObject,
  rawPublicKey: Buffer,
  crossCheck: boolean,
  lineNumber: number,
): Record<string, unknown> {
  const at = `line ${lineNumber}`;
  const weakSignature = ed25519SignatureProblem(cut.signature);
  if (weakSignature !== undefined) throw new LineFailure(lineNumber, `${at}: bad signature: ${weakSignature}`);
  const nodeOk = verifyWithNodeCrypto(publicKey, cut.payload, cut.signature);
  if (crossCheck) {
    let naclOk = false;
    try {
      naclOk = nacl.sign.detached.verify(cut.payload, cut.signature, rawPublicKey);
    } catch {
      naclOk = false;
    }
    if (naclOk !== nodeOk) {
      throw new LineFailure(
        lineNumber,
        `${at}: Node.js crypto (${nodeOk ? 'valid' : 'invalid'}) and tweetnacl (${naclOk ? 'valid' : 'invalid'}) disagree on the signature`,
      );
    }
  }
  if (!nodeOk) throw new LineFailure(lineNumber, `${at}: bad signature: the payload does not verify with the given public key`);

  let payload: unknown;
  try {
    payload = parseStrictJson(decodeUtf8Strict(cut.payload, at), { checkNumber: journalNumberProblem, maxDepth: PAYLOAD_MAX_DEPTH });
  } catch (err) {
    const why = err instanceof StrictJsonError ? err.message : 'the payload is not valid UTF-8';
    throw new LineFailure(lineNumber, `${at}: malformed line: ${why}`);
  }
  if (!isRecord(payload)) throw new LineFailure(lineNumber, `${at}: malformed line: the payload is not a JSON object`);
  const payloadExtra = unknownKeyProblem(payload, PAYLOAD_FIELDS, 'the payload');
  if (payloadExtra !== undefined) throw new LineFailure(lineNumber, `${at}: malformed line: ${payloadExtra}`);
  return payload;
}

function checkEventOrder(
  name: string,
  fields: Record<string, unknown>,
  report: InspectReport,
  calls: Map<string, EffectRow & { response_recorded: boolean }>,
  lineNumber: number,
  state: FormatState,
): void {
  const at = `line ${lineNumber}`;
  if (report.terminal_reason !== null) throw new LineFailure(lineNumber, `${at}: a record follows the Terminated record`);
  // A journal that does not begin with Started is reported (it needs
  // reconciliation), as Symbiont does; a Started anywhere but first is a failure.
  if (report.records > 0 && name === STARTED_EVENT) {
    throw new LineFailure(lineNumber, `${at}: a Started record that is not the first record`);
  }
  if (name === STARTED_EVENT) {
    const context = fields.execution_context;
    const definition = isRecord(context) ? context.agent_definition : undefined;
    report.agent_name = isRecord(definition) ? flatString(definition.name) : null;
    if (state.format === SYMBIONT_FORMAT && fields.agent_id !== report.agent_id) {
      throw new LineFailure(lineNumber, `${at}: Started.agent_id ${String(fields.agent_id)} is not the entry's agent_id ${String(report.agent_id)}`);
    }
    return;
  }
  if (name === 'BudgetOpened' || name === 'BudgetReservationStarted' || name === 'BudgetReservationFinished') {
    checkBudgetRecord(name, fields, report, calls, lineNumber, state);
    return;
  }
  if (name === TERMINATED_EVENT) {
    const reason = terminalReasonOf(fields, state.format ?? LEGACY_FORMAT);
    if (reason === null) {
      throw new LineFailure(lineNumber, `${at}: malformed line: Terminated.reason is neither "Completed" nor {"Error":{"message":...}}`);
    }
    report.terminal_reason = reason;
    return;
  }
  if (name === REQUESTED_EVENT || name === FINISHED_EVENT || name === RESPONSE_EVENT) {
    const callId = fields.call_id;
    if (typeof callId !== 'string' || callId.length === 0) {
      throw new LineFailure(lineNumber, `${at}: malformed line: ${name} has no call_id string`);
    }
    const known = calls.get(callId);
    if (name === REQUESTED_EVENT) {
      if (known) throw new LineFailure(lineNumber, `${at}: provider call ${callId.slice(0, 128)} is requested twice`);
      if (calls.size >= JOURNAL_TRACKED_OPERATIONS_MAX) {
        throw new LineFailure(lineNumber, `${at}: more than ${JOURNAL_TRACKED_OPERATIONS_MAX} tracked operations; an inspection classifies at most that many`);
      }
      calls.set(callId, {
        identity: { kind: 'direct_inference', call_id: callId },
        start_sequence: report.records,
        finish_sequence: null,
        outcome: 'unknown',
        details: {
          operation: flatString(fields.operation),
          provider: flatString(fields.provider),
          model: flatString(fields.model),
          request_hash: flatString(fields.request_hash),
        },
        response_recorded: false,
      });
      return;
    }
    if (!known) throw new LineFailure(lineNumber, `${at}: ${name} for provider call ${callId.slice(0, 128)} that was never requested`);
    if (known.finish_sequence !== null) {
      throw new LineFailure(lineNumber, `${at}: ${name} for provider call ${callId.slice(0, 128)} after its finish`);
    }
    if (name === FINISHED_EVENT) {
      known.finish_sequence = report.records;
      // Only a completed call with its response hash establishes a result.
      if (fields.reason === 'Completed' && typeof fields.response_hash === 'string') known.outcome = 'result_recorded';
    } else {
      known.response_recorded = true;
    }
  }
}

interface FormatState {
  format: RecordFormat | undefined;
  /** The route's budget, replayed from its records as Symbiont's recovery replays them. */
  budget: RunBudget | undefined;
  /** The reservations started so far, by id: their effect rows. */
  reservations: Map<string, EffectRow>;
  /** How the run ended, as the records say. */
  ending: RunEndingReader;
}

/**
 * Why a payload the journal writer is about to sign would be refused by this verifier, or undefined:
 * the writer's one check before its signature (journal-writer.ts), with the rules every line is held
 * to here (strict JSON: no unpaired surrogate, every number as the writer writes it) and, for a
 * record of Symbiont's format, its declaration (journal-records.ts: Symbiont's field types, `u32`
 * counts included) and its entry's iteration. The chain and the order are the writer's own.
 */
export function unsignableProblem(payloadText: string, symbiontRecord: boolean): string | undefined {
  let payload: unknown;
  try {
    payload = parseStrictJson(payloadText, { checkNumber: journalNumberProblem, maxDepth: PAYLOAD_MAX_DEPTH });
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    return err.at === '' ? err.message : `${err.at}: ${err.message}`;
  }
  if (!symbiontRecord) return undefined;
  const entry = isRecord(payload) && isRecord(payload.entry) ? payload.entry : {};
  const event = isRecord(entry.event) ? entry.event : {};
  const name = Object.keys(event)[0] ?? '';
  const fields = event[name];
  const problem = eventProblem(SYMBIONT_FORMAT, name, fields);
  if (problem !== undefined || !isRecord(fields)) return problem ?? `the fields of ${name} are not an object`;
  return iterationProblem(SYMBIONT_FORMAT, name, fields, entry.iteration);
}

/** Symbiont's records begin with a Started that has its `config`; a journal of this server's 0.1 format does not. */
function formatOf(name: string, fields: unknown): RecordFormat {
  if (name === STARTED_EVENT) return isRecord(fields) && Object.hasOwn(fields, 'config') ? SYMBIONT_FORMAT : LEGACY_FORMAT;
  return Object.hasOwn(RECORDS, name) && !Object.hasOwn(LEGACY_FORMAT.events, name) ? SYMBIONT_FORMAT : LEGACY_FORMAT;
}

/**
 * The entry's iteration as each format writes it: always 1 in the 0.1 format; in Symbiont's, 0 for
 * the records written before the reasoning step's (ENTRY_ITERATION_ZERO), 1 for the provider call's,
 * the event's own `iteration` or `iterations` where it has one, and at most 1 (max_iterations).
 */
function iterationProblem(format: RecordFormat, name: string, fields: Record<string, unknown>, iteration: unknown): string | undefined {
  if (format === LEGACY_FORMAT) return iteration === 1 ? undefined : 'iteration is not 1';
  if (iteration !== 0 && iteration !== 1) return 'iteration is neither 0 nor 1 (the route runs one iteration)';
  // The event's own iteration fields were checked against their declaration already: integers.
  const expected = (
    ENTRY_ITERATION_ZERO.has(name) ? 0 : name.startsWith('DirectInference') ? 1 : name === TERMINATED_EVENT ? fields.iterations : fields.iteration
  ) as number | undefined;
  if (expected !== undefined && expected !== iteration) return `iteration is ${iteration}, but a ${name} record of this run has iteration ${expected}`;
  return undefined;
}

/** The budget records, checked and replayed as Symbiont's budget recovery does (budget/journal.rs). */
function checkBudgetRecord(
  name: string,
  fields: Record<string, unknown>,
  report: InspectReport,
  calls: Map<string, EffectRow & { response_recorded: boolean }>,
  lineNumber: number,
  state: FormatState,
): void {
  const at = `line ${lineNumber}`;
  if (name === 'BudgetOpened') {
    if (state.budget !== undefined) throw new LineFailure(lineNumber, `${at}: a second BudgetOpened record`);
    state.budget = new RunBudget(fields.root_id as string, fields.limit as number);
    return;
  }
  const budget = state.budget;
  if (budget === undefined) throw new LineFailure(lineNumber, `${at}: ${name} before BudgetOpened`);
  if (name === 'BudgetReservationStarted') {
    const reservation = fields.reservation as {
      id: string;
      root_id: string;
      input_tokens: number;
      output_tokens: number;
      provider: string;
      model: string;
      request_hash: string;
      ancestors: { scope: number; parent: number | null; limit: number }[];
    };
    if (reservation.root_id !== budget.rootId) throw new LineFailure(lineNumber, `${at}: the reservation's root_id is not the opened budget's`);
    if (state.reservations.has(reservation.id)) throw new LineFailure(lineNumber, `${at}: reservation ${reservation.id} is started twice`);
    if (reservation.output_tokens === 0) throw new LineFailure(lineNumber, `${at}: a reservation of no output tokens`);
    const last = reservation.ancestors.at(-1);
    if (last === undefined || last.scope !== 0 || last.parent !== null || last.limit !== budget.limit) {
      throw new LineFailure(lineNumber, `${at}: the reservation's ancestors do not end at the opened budget`);
    }
    if (reservation.input_tokens + reservation.output_tokens > budget.available) {
      throw new LineFailure(
        lineNumber,
        `${at}: the reservation of ${reservation.input_tokens + reservation.output_tokens} tokens is more than the ${budget.available} available`,
      );
    }
    if (calls.size + state.reservations.size >= JOURNAL_TRACKED_OPERATIONS_MAX) {
      throw new LineFailure(lineNumber, `${at}: more than ${JOURNAL_TRACKED_OPERATIONS_MAX} tracked operations; an inspection classifies at most that many`);
    }
    budget.adopt({ id: reservation.id, input: reservation.input_tokens, output: reservation.output_tokens });
    state.reservations.set(reservation.id, {
      identity: { kind: 'shared_inference', reservation_id: reservation.id },
      start_sequence: report.records,
      finish_sequence: null,
      outcome: 'unknown',
      details: { operation: null, provider: reservation.provider, model: reservation.model, request_hash: reservation.request_hash },
    });
    return;
  }
  const id = fields.reservation_id as string;
  const row = state.reservations.get(id);
  if (fields.root_id !== budget.rootId) throw new LineFailure(lineNumber, `${at}: the settlement's root_id is not the opened budget's`);
  if (row === undefined) throw new LineFailure(lineNumber, `${at}: a settlement of reservation ${id}, which was never started`);
  if (row.finish_sequence !== null) throw new LineFailure(lineNumber, `${at}: reservation ${id} is settled twice`);
  const recorded = fields.outcome as SettlementOutcome;
  const recomputed = budget.settle(id, fields.usage as { prompt_tokens: number; completion_tokens: number; total_tokens: number });
  if (recorded !== recomputed) {
    throw new LineFailure(lineNumber, `${at}: the settlement records outcome "${recorded}", but its usage gives "${recomputed}" by Symbiont's rule`);
  }
  row.finish_sequence = report.records;
  row.outcome = 'result_recorded';
}

function formatLimit(ms: number): string {
  return `${ms / 1000} s`;
}

function checkTail(fragment: Buffer, report: InspectReport, lineNumber: number): void {
  const k = fragment.length;
  if (k > JOURNAL_LINE_MAX_BYTES) {
    throw new LineFailure(lineNumber, `line ${lineNumber}: tail fragment of ${k} bytes is longer than a journal line may be`);
  }
  // Whatever it holds and wherever it stands (even after Terminated), a final
  // fragment is evidence to reconcile, never a verified record.
  report.unverified_tail_bytes = k;
}

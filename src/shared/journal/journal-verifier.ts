import { createRequire } from 'node:module';
import type { KeyObject } from 'node:crypto';
import { sha256Hex } from '../canonical-json.js';
import { JOURNAL_LINE_MAX_BYTES } from '../limits.js';
import { decodeUtf8Strict } from '../pinned-directory.js';
import {
  FINISHED_EVENT,
  GENESIS_PREVIOUS_HASH,
  isCanonicalUuid,
  JOURNAL_FORMAT_VERSION,
  NEWLINE,
  REQUESTED_EVENT,
  STARTED_EVENT,
  TERMINATED_EVENT,
  type TerminalReason,
} from './journal-format.js';
import { readJournalFile, JournalFileRefusal } from './journal-file-reader.js';
import { couldBeginRecord, cutRecordLine } from './journal-line.js';
import { isPublicKeyHex, publicKeyFromHex, verifyWithNodeCrypto } from './signing-key.js';

// The read-only verifier behind `symbi audit inspect`. It checks every
// complete line (signature over the exact embedded payload bytes, hash chain,
// sequence, run id, one principal, event order) and reports what the journal
// establishes. It never repairs, truncates or appends.
//
// Hostile input: lines and the file are size-checked before parsing, UTF-8 is
// decoded strictly, JSON.parse is iterative in V8 (deep nesting cannot
// overflow the stack), and nothing parsed from the file is re-serialised
// except values checked to be flat strings.

type Nacl = { sign: { detached: { verify(msg: Uint8Array, sig: Uint8Array, publicKey: Uint8Array): boolean } } };
const nacl = createRequire(import.meta.url)('tweetnacl') as Nacl;

export type InspectVerdict = 'complete' | 'requires_reconciliation' | 'failed';

export interface ProviderCallRow {
  call_id: string;
  /** `result_recorded` when a DirectInferenceFinished record closes the call, otherwise `unknown`. */
  outcome: 'result_recorded' | 'unknown';
  provider: string | null;
  model: string | null;
  response_recorded: boolean;
  /** The finish record's reason: a string, or the name of its single key (e.g. "Error"). */
  finish: string | null;
}

export interface InspectReport {
  journal: string;
  run_id: string;
  public_key: string;
  verdict: InspectVerdict;
  journal_complete: boolean;
  requires_reconciliation: boolean;
  reconciliation_reasons: string[];
  terminal_reason: TerminalReason | null;
  /** Complete records that verified (all of them unless verification failed). */
  records: number;
  unverified_tail_bytes: number;
  agent_id: string | null;
  agent_name: string | null;
  started_at: string | null;
  last_event: string | null;
  last_timestamp: string | null;
  provider_calls: ProviderCallRow[];
  /** True when every signature was also verified with tweetnacl and both implementations agreed. */
  cross_checked: boolean;
  error?: { line: number | null; message: string };
}

export interface InspectOptions {
  /** Also verify every signature with tweetnacl and fail if the two implementations disagree. */
  crossCheck?: boolean;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const HEX64 = /^[0-9a-f]{64}$/;

class LineFailure extends Error {
  constructor(
    readonly line: number | null,
    message: string,
  ) {
    super(message);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function flatString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function terminalReasonOf(fields: Record<string, unknown>): TerminalReason | null {
  const reason = fields.reason;
  if (reason === 'Completed') return 'Completed';
  if (isPlainObject(reason) && Object.keys(reason).length === 1 && isPlainObject(reason.Error)) {
    const message = reason.Error.message;
    if (typeof message === 'string') return { Error: { message } };
  }
  return null;
}

function finishNameOf(reason: unknown): string | null {
  if (typeof reason === 'string') return reason;
  if (isPlainObject(reason)) {
    const keys = Object.keys(reason);
    if (keys.length === 1) return keys[0]!;
  }
  return null;
}

function emptyReport(journal: string, runId: string, publicKeyHex: string): InspectReport {
  return {
    journal,
    run_id: runId,
    public_key: publicKeyHex,
    verdict: 'failed',
    journal_complete: false,
    requires_reconciliation: false,
    reconciliation_reasons: [],
    terminal_reason: null,
    records: 0,
    unverified_tail_bytes: 0,
    agent_id: null,
    agent_name: null,
    started_at: null,
    last_event: null,
    last_timestamp: null,
    provider_calls: [],
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
}

export interface InspectResult {
  report: InspectReport;
  exitCode: 0 | 1 | 2;
}

/** Verifies the journal at `filePath` for run `runId` against the raw Ed25519 public key `publicKeyHex`. */
export function inspectJournal(filePath: string, runId: string, publicKeyHex: string, options: InspectOptions = {}): InspectResult {
  let bytes: Buffer;
  try {
    bytes = readJournalFile(filePath);
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
  if (!isPublicKeyHex(report.public_key)) return 'the public key must be 64 hexadecimal characters (the raw 32-byte Ed25519 key)';
  return undefined;
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
  const chainEnd: ChainEnd = { previousHash: GENESIS_PREVIOUS_HASH, nextSequence: 0, verifiedBytes: 0 };
  const fail = (line: number | null, message: string) => {
    report.verdict = 'failed';
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
    verifyBytes(bytes, report, publicKey, options.crossCheck === true, chainEnd);
  } catch (err) {
    if (err instanceof LineFailure) return fail(err.line, err.message);
    // Defensive: any unexpected fault is a failed verification, never a crash.
    return fail(null, `verification stopped: ${(err as Error).message}`);
  }
  report.cross_checked = options.crossCheck === true;
  report.journal_complete = report.terminal_reason !== null && report.unverified_tail_bytes === 0;
  const reasons = report.reconciliation_reasons;
  if (report.records === 0) reasons.push('the journal holds no complete record');
  else if (report.terminal_reason === null) reasons.push('no Terminated record');
  for (const call of report.provider_calls) {
    if (call.outcome === 'unknown') reasons.push(`provider call ${call.call_id} was requested but its finish was not recorded`);
  }
  if (report.unverified_tail_bytes > 0) {
    reasons.push(`a final fragment of ${report.unverified_tail_bytes} bytes without a newline is not authenticated`);
  }
  report.requires_reconciliation = reasons.length > 0;
  report.verdict = report.requires_reconciliation ? 'requires_reconciliation' : 'complete';
  return { report, exitCode: report.requires_reconciliation ? 2 : 0, chainEnd };
}

function verifyBytes(bytes: Buffer, report: InspectReport, publicKey: KeyObject, crossCheck: boolean, chainEnd: ChainEnd): void {
  const rawPublicKey = Buffer.from(report.public_key, 'hex');
  const calls = new Map<string, ProviderCallRow>();
  let previousHash = GENESIS_PREVIOUS_HASH;
  let start = 0;
  let lineNumber = 0;
  while (start < bytes.length) {
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
      payload = JSON.parse(decodeUtf8Strict(cut.payload, at));
    } catch {
      throw new LineFailure(lineNumber, `${at}: malformed line: the payload is not valid UTF-8 JSON`);
    }
    if (!isPlainObject(payload)) throw new LineFailure(lineNumber, `${at}: malformed line: the payload is not a JSON object`);
    if (payload.version !== JOURNAL_FORMAT_VERSION) {
      throw new LineFailure(lineNumber, `${at}: unsupported payload version (expected ${JOURNAL_FORMAT_VERSION})`);
    }
    if (payload.run_id !== report.run_id) {
      const other = isCanonicalUuid(payload.run_id) ? ` ${payload.run_id}` : '';
      throw new LineFailure(lineNumber, `${at}: other run: the record belongs to run${other}, not ${report.run_id}`);
    }
    if (typeof payload.previous_hash !== 'string' || !HEX64.test(payload.previous_hash)) {
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
    if (!isPlainObject(entry)) throw new LineFailure(lineNumber, `${at}: malformed line: entry is not an object`);
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
    if (entry.iteration !== 1) throw new LineFailure(lineNumber, `${at}: malformed line: iteration is not 1`);
    const event = entry.event;
    if (!isPlainObject(event) || Object.keys(event).length !== 1) {
      throw new LineFailure(lineNumber, `${at}: malformed line: event is not an object with exactly one key`);
    }
    const name = Object.keys(event)[0]!;
    const fields = event[name];
    if (!isPlainObject(fields)) throw new LineFailure(lineNumber, `${at}: malformed line: the fields of ${name.slice(0, 64)} are not an object`);

    checkEventOrder(name, fields, report, calls, lineNumber);

    if (report.records === 0) report.started_at = entry.timestamp;
    report.records += 1;
    report.last_event = name;
    report.last_timestamp = entry.timestamp;
    previousHash = sha256Hex(lineWithNewline);
    start = end + 1;
    chainEnd.previousHash = previousHash;
    chainEnd.nextSequence = report.records;
    chainEnd.verifiedBytes = start;
  }
  report.provider_calls = [...calls.values()];
}

function checkEventOrder(
  name: string,
  fields: Record<string, unknown>,
  report: InspectReport,
  calls: Map<string, ProviderCallRow>,
  lineNumber: number,
): void {
  const at = `line ${lineNumber}`;
  if (report.terminal_reason !== null) throw new LineFailure(lineNumber, `${at}: a record follows the Terminated record`);
  if (report.records === 0 && name !== STARTED_EVENT) {
    throw new LineFailure(lineNumber, `${at}: the first record is ${name.slice(0, 64)}; a journal begins with Started`);
  }
  if (report.records > 0 && name === STARTED_EVENT) throw new LineFailure(lineNumber, `${at}: a second Started record`);
  if (name === STARTED_EVENT) {
    const context = fields.execution_context;
    const definition = isPlainObject(context) ? context.agent_definition : undefined;
    report.agent_name = isPlainObject(definition) ? flatString(definition.name) : null;
    return;
  }
  if (name === TERMINATED_EVENT) {
    const reason = terminalReasonOf(fields);
    if (reason === null) {
      throw new LineFailure(lineNumber, `${at}: malformed line: Terminated.reason is neither "Completed" nor {"Error":{"message":...}}`);
    }
    report.terminal_reason = reason;
    return;
  }
  if (name === REQUESTED_EVENT || name === FINISHED_EVENT || name === 'DirectInferenceResponseReceived') {
    const callId = fields.call_id;
    if (typeof callId !== 'string' || callId.length === 0) {
      throw new LineFailure(lineNumber, `${at}: malformed line: ${name} has no call_id string`);
    }
    const known = calls.get(callId);
    if (name === REQUESTED_EVENT) {
      if (known) throw new LineFailure(lineNumber, `${at}: provider call ${callId.slice(0, 128)} is requested twice`);
      calls.set(callId, {
        call_id: callId,
        outcome: 'unknown',
        provider: flatString(fields.provider),
        model: flatString(fields.model),
        response_recorded: false,
        finish: null,
      });
      return;
    }
    if (!known) throw new LineFailure(lineNumber, `${at}: ${name} for provider call ${callId.slice(0, 128)} that was never requested`);
    if (known.outcome === 'result_recorded') {
      throw new LineFailure(lineNumber, `${at}: ${name} for provider call ${callId.slice(0, 128)} after its finish`);
    }
    if (name === FINISHED_EVENT) {
      known.outcome = 'result_recorded';
      known.finish = finishNameOf(fields.reason);
    } else {
      known.response_recorded = true;
    }
  }
}

function checkTail(fragment: Buffer, report: InspectReport, lineNumber: number): void {
  const k = fragment.length;
  if (k > JOURNAL_LINE_MAX_BYTES) {
    throw new LineFailure(lineNumber, `line ${lineNumber}: tail fragment of ${k} bytes is longer than a journal line may be`);
  }
  if (report.terminal_reason !== null) {
    throw new LineFailure(lineNumber, `line ${lineNumber}: tail fragment of ${k} bytes after the Terminated record`);
  }
  if (!couldBeginRecord(fragment)) {
    throw new LineFailure(lineNumber, `line ${lineNumber}: tail fragment of ${k} bytes that is not the beginning of a record`);
  }
  report.unverified_tail_bytes = k;
}

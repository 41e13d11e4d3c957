import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import nacl from 'tweetnacl';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { symbiBin } from './server-entry.js';
import { checkWriterRule, readAsSymbiont } from './symbiont-reader.js';

// Reading a test project's signed journals: their records, the project's
// public key, and `symbi audit inspect`'s verdict on them (in this process, or as a process).

/** One journal line and its parsed payload. */
export interface JournalRecord {
  line: string;
  payload: {
    version: number;
    run_id: string;
    previous_hash: string;
    entry: { sequence: number; agent_id: string; event: Record<string, Record<string, unknown>> };
  };
}

/**
 * Every complete record of a journal file, in order (a line still being written, with no newline yet,
 * is not one). A journal of Symbiont's records (its first a `Started` with a `config`) is also held to
 * Symbiont's writer rule (symbiont-reader.ts), so every test that reads a journal checks it.
 */
export function readJournal(file: string): JournalRecord[] {
  const text = fs.readFileSync(file, 'utf8');
  const records: JournalRecord[] = text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((l) => l.length > 0)
    .map((line) => ({ line, payload: JSON.parse(line).payload }));
  const events = records.map((r) => r.payload?.entry?.event);
  if (events.every((e) => typeof e === 'object' && e !== null) && events[0]?.Started?.config !== undefined) checkWriterRule(events, file);
  return records;
}

/** The event name of each record, in order. */
export function eventNames(records: JournalRecord[]): string[] {
  return records.map((r) => Object.keys(r.payload.entry.event)[0]!);
}

/** The journal files of a project's governed runs. */
export function journalsIn(project: string): string[] {
  const dir = path.join(project, '.symbiont', 'governed');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .map((n) => path.join(dir, n));
}

/** The journal shapes (their records' event names, in order) this process has cross-checked with tweetnacl. */
const crossCheckedShapes = new Set<string>();

/** The shape of a journal: its records' event names in order; a file that cannot be read as records is a shape of its own. */
function journalShape(journal: string): string {
  try {
    return eventNames(readJournal(journal)).join(',');
  } catch {
    return `unparsed:${journal}`;
  }
}

/**
 * A run's verdict, as `symbi audit inspect --cross-check` gives it: the exit status and the report it
 * prints. The verifier runs in this process, the code the command runs; the command itself (its
 * arguments, standard output, exit status) is tested through the process by inspectWithCli, by
 * audit-cli.test.ts and by journal-tamper.test.ts.
 *
 * Every signature is verified with Node's crypto. tweetnacl verifies them too the first time this
 * process reads a journal of its shape (its records' event names in order): every kind of run a test
 * produces is cross-checked, and a repeat of the same kind is not, since at about 15 ms a signature
 * here the repeats cost 15 s of the suite's processor time and check the same signing code on the same
 * record kinds. The cross-check of every record is `inspectWithCli`'s, and `audit-cli` and `journal-tamper`'s.
 */
export function inspect(journal: string, runId: string, publicKey: string): { status: number; report: Record<string, unknown> } {
  const shape = journalShape(journal);
  const crossCheck = !crossCheckedShapes.has(shape);
  crossCheckedShapes.add(shape);
  const { exitCode, report } = inspectJournal(journal, runId.toLowerCase(), publicKey.toLowerCase(), { crossCheck });
  // As the command prints it: JSON, so a field left undefined is absent.
  return checkedAsSymbiont(journal, exitCode, JSON.parse(JSON.stringify(report)) as Record<string, unknown>);
}

/** `symbi audit inspect --cross-check` on one run, as a process: its exit status and the JSON report it prints. */
export function inspectWithCli(journal: string, runId: string, publicKey: string): { status: number; report: Record<string, unknown> } {
  const result = spawnSync(process.execPath, [symbiBin, 'audit', 'inspect', journal, '--run-id', runId, '--public-key', publicKey, '--cross-check'], {
    encoding: 'utf8',
  });
  let report: Record<string, unknown> = {};
  try {
    report = JSON.parse(result.stdout);
  } catch {
    report = { unparsed: result.stdout, stderr: result.stderr };
  }
  return checkedAsSymbiont(journal, result.status ?? -1, report);
}

function checkedAsSymbiont(journal: string, status: number, report: Record<string, unknown>): { status: number; report: Record<string, unknown> } {
  // A journal `audit inspect` verifies as Symbiont's format must also deserialize under Symbiont's
  // own types, read by the independent reader (symbiont-reader.ts), whatever the test looks at next.
  if (status !== 1 && report.record_format === 'symbiont-response-route' && report.unverified_tail_bytes === 0) readAsSymbiont(journal);
  return { status, report };
}

/** The run id a journal's name carries: `<run_id>.jsonl`, or Symbiont's `<agent_id>.<run_id>.jsonl`. */
export function runIdOf(file: string): string {
  return path.basename(file, '.jsonl').split('.').at(-1)!;
}

/** The public key derived independently (tweetnacl) from the project's key file. */
export function projectPublicKey(project: string): string {
  const seed = fs.readFileSync(path.join(project, '.symbiont', 'governed', 'audit-signing.key'));
  return Buffer.from(nacl.sign.keyPair.fromSeed(new Uint8Array(seed)).publicKey).toString('hex');
}

/**
 * A finished run's journal is complete. When the run had sent its provider
 * request and no result was recorded (a cancel, an error, a lost thread), that
 * call is an unknown effect, so the journal also needs reconciliation (exit 2),
 * as Symbiont's inspect reports it; otherwise it exits 0. Returns the exit code.
 */
export function assertCompleteJournal(file: string, key: string): number {
  // Every record also deserializes under Symbiont's own types (symbiont-reader.ts).
  readAsSymbiont(file);
  const { exitCode, report } = inspectJournal(file, runIdOf(file), key);
  assert.equal(report.journal_complete, true, `${file}: ${JSON.stringify(report)}`);
  const unknown = report.effects.some((effect) => effect.outcome === 'unknown');
  assert.equal(exitCode, unknown ? 2 : 0, `${file}: ${JSON.stringify(report)}`);
  return exitCode;
}

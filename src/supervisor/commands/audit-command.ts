import path from 'node:path';
import type { Command } from 'commander';
import { PinnedDirectory, pinProject } from '../../shared/confinement/index.js';
import { isCanonicalUuid } from '../../shared/text/uuid.js';
import { isPublicKeyHex, publicKeyHexProblem } from '../../shared/signing/signing-key.js';
import { inspectJournal } from '../../shared/journal/journal-verifier.js';
import { listRuns, type RunListing, type RunSummary } from '../../shared/journal/journal-listing.js';
import { JOURNAL_FILE_MAX_BYTES } from '../../shared/limits.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';

// `symbi audit inspect` (the read-only verifier: JSON report on stdout, exit
// 0 complete, 2 needs reconciliation, 1 failed or bad usage) and
// `symbi audit list` (the project's runs, newest first). Every line for
// people goes through escapeToOneLine: file names, agent names and error
// texts come from the project or from signed records, and must not reach the
// terminal as control sequences. --json output is JSON, exact.

const INSPECT_USAGE = 'usage: symbi audit inspect JOURNAL --run-id UUID --public-key HEX [--cross-check] [--max-bytes N] [--time-limit SECONDS]';
const LIST_USAGE = 'usage: symbi audit list [--project DIR] [--needs-attention] [--json]';

/** On a terminal, a verification that has run this long starts saying how far it is. */
const PROGRESS_AFTER_MS = 2000;
const PROGRESS_INTERVAL_MS = 1000;

function say(line: string): void {
  process.stderr.write(`${escapeToOneLine(line)}\n`);
}

function usageError(usage: string, problem: string): void {
  say(`error: ${problem}`);
  say(usage);
  process.exitCode = 1;
}

interface InspectFlags {
  runId?: string;
  publicKey?: string;
  crossCheck?: boolean;
  maxBytes?: string;
  timeLimit?: string;
}

const WHOLE_NUMBER = /^[0-9]{1,16}$/;
const SECONDS = /^[0-9]{1,9}(\.[0-9]{1,3})?$/;

function progressReporter(): ((verifiedBytes: number, totalBytes: number) => void) | undefined {
  if (process.stderr.isTTY !== true) return undefined;
  const began = performance.now();
  let shownAt = 0;
  return (verifiedBytes, totalBytes) => {
    const now = performance.now();
    if (now - began < PROGRESS_AFTER_MS || now - shownAt < PROGRESS_INTERVAL_MS) return;
    shownAt = now;
    const percent = totalBytes === 0 ? 100 : Math.floor((verifiedBytes / totalBytes) * 100);
    say(`verifying: ${verifiedBytes} of ${totalBytes} bytes (${percent}%), ${Math.round((now - began) / 1000)} s so far`);
  };
}

function runInspect(journal: string | undefined, flags: InspectFlags): void {
  if (journal === undefined || journal === '') return usageError(INSPECT_USAGE, 'missing JOURNAL (the path of a <run_id>.jsonl file)');
  if (flags.runId === undefined) return usageError(INSPECT_USAGE, 'missing --run-id UUID');
  if (flags.publicKey === undefined) return usageError(INSPECT_USAGE, 'missing --public-key HEX');
  const runId = flags.runId.toLowerCase();
  if (!isCanonicalUuid(runId)) return usageError(INSPECT_USAGE, '--run-id must be a UUID (8-4-4-4-12 hexadecimal digits)');
  if (!isPublicKeyHex(flags.publicKey)) {
    return usageError(INSPECT_USAGE, '--public-key must be 64 hexadecimal characters (the raw 32-byte Ed25519 public key)');
  }
  const keyProblem = publicKeyHexProblem(flags.publicKey);
  if (keyProblem !== undefined) return usageError(INSPECT_USAGE, `--public-key: ${keyProblem}`);
  let maxBytes: number | undefined;
  if (flags.maxBytes !== undefined) {
    if (!WHOLE_NUMBER.test(flags.maxBytes) || Number(flags.maxBytes) > JOURNAL_FILE_MAX_BYTES) {
      return usageError(INSPECT_USAGE, `--max-bytes must be a whole number of bytes up to ${JOURNAL_FILE_MAX_BYTES}`);
    }
    maxBytes = Number(flags.maxBytes);
  }
  let timeLimitMs: number | undefined;
  if (flags.timeLimit !== undefined) {
    if (!SECONDS.test(flags.timeLimit)) return usageError(INSPECT_USAGE, '--time-limit must be a number of seconds (up to three decimals)');
    timeLimitMs = Number(flags.timeLimit) * 1000;
  }
  const onProgress = progressReporter();
  const { report, exitCode } = inspectJournal(path.resolve(journal), runId, flags.publicKey.toLowerCase(), {
    crossCheck: flags.crossCheck === true,
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(timeLimitMs !== undefined ? { timeLimitMs } : {}),
    ...(onProgress !== undefined ? { onProgress } : {}),
    onCrossCheckEstimate: (records, msPerSignature) => {
      const seconds = (records * msPerSignature) / 1000;
      say(
        `cross-check: ${records} signatures to verify again with tweetnacl at the measured ${msPerSignature.toFixed(1)} ms each: ` +
          `about ${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s (--time-limit bounds it)`,
      );
    },
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (exitCode === 1) say(`verification failed: ${report.error?.message ?? 'unknown reason'}`);
  else if (exitCode === 2) say(`records verify, but reconciliation is needed: ${report.warnings.join('; ')}`);
  else say(`journal verifies and is complete (${report.records} records)`);
  process.exitCode = exitCode;
}

/**
 * Widest cell of `audit list`'s table, in characters: a run id is 36, a timestamp 24, and an agent
 * name or outcome beyond this is cut with an ellipsis (--json keeps the whole string), so one journal
 * with a huge name cannot widen every row.
 */
const LIST_CELL_MAX_CHARS = 48;

const VERDICT_SHOWN: Record<RunSummary['verdict'], string> = {
  complete: 'complete',
  requires_reconciliation: 'requires reconciliation',
  failed: 'failed',
  not_checked: 'not checked (no key)',
};

/** One table cell: escaped for the terminal, then cut to LIST_CELL_MAX_CHARS code points. */
function cell(text: string): string {
  // Escaping only lengthens the text, so a slice of twice the width is enough to escape and cut.
  const shown = [...escapeToOneLine(text.slice(0, LIST_CELL_MAX_CHARS * 2))];
  return shown.length > LIST_CELL_MAX_CHARS || text.length > LIST_CELL_MAX_CHARS * 2 ? `${shown.slice(0, LIST_CELL_MAX_CHARS - 1).join('')}…` : shown.join('');
}

function formatTable(listing: RunListing, needsAttention: boolean): string {
  const header = ['RUN ID', 'AGENT', 'STARTED', 'LAST EVENT', 'OUTCOME', 'FORMAT', 'VERIFIES', 'VERDICT'];
  const rows = listing.runs.map((run) =>
    [
      run.run_id,
      run.agent ?? '-',
      run.started_at ?? '-',
      run.last_event ?? '-',
      run.outcome,
      run.record_format ?? '-',
      run.verdict === 'not_checked' ? 'no key' : run.verifies ? 'yes' : 'no',
      VERDICT_SHOWN[run.verdict],
    ].map(cell),
  );
  // A loop, not Math.max(...rows): a spread of a million rows would overflow the stack.
  const widths = header.map((h) => [...h].length);
  for (const row of rows) row.forEach((c, i) => (widths[i] = Math.max(widths[i]!, [...c].length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i]! - [...c].length))).join('  ');
  const lines = [`Runs in ${escapeToOneLine(listing.governed_path)} (newest first${needsAttention ? ', only those needing attention' : ''})`];
  if (listing.public_key) lines.push(`Project key: ${listing.public_key}`);
  if (rows.length === 0) lines.push(needsAttention ? 'No run needs attention.' : 'No runs recorded.');
  else lines.push(render(header), ...rows.map(render));
  const flagged = listing.runs.filter((run) => run.requires_reconciliation === true).length;
  if (flagged > 0) lines.push('', `${flagged} run(s) require reconciliation: symbi audit inspect JOURNAL --run-id UUID --public-key HEX says why.`);
  lines.push('', listing.note);
  return `${lines.join('\n')}\n`;
}

interface ListFlags {
  project?: string;
  json?: boolean;
  needsAttention?: boolean;
}

function runList(flags: ListFlags): void {
  let project: PinnedDirectory;
  const dir = flags.project ?? process.cwd();
  try {
    project = pinProject(dir);
  } catch (err) {
    return usageError(LIST_USAGE, `cannot open project directory ${dir} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let listing: RunListing;
  try {
    listing = listRuns(project);
  } catch (err) {
    say((err as Error).message);
    process.exitCode = 1;
    return;
  }
  for (const warning of listing.warnings) say(`warning: ${warning}`);
  const needsAttention = flags.needsAttention === true;
  // Needing attention: any verdict but complete (reconciliation, a failed verification, or no key to check with).
  if (needsAttention) listing.runs = listing.runs.filter((run) => run.verdict !== 'complete');
  process.stdout.write(flags.json ? `${JSON.stringify(listing, null, 2)}\n` : formatTable(listing, needsAttention));
}

export function registerAuditCommand(program: Command): void {
  const audit = program.command('audit').description('Verify and list the signed audit journals of governed runs');

  audit
    .command('inspect')
    .description('Verify one journal against a public key kept outside the project; exit 0 complete, 2 needs reconciliation, 1 failed')
    .argument('[journal]', 'path of the <run_id>.jsonl journal')
    .option('--run-id <uuid>', 'the run id the journal must belong to')
    .option('--public-key <hex>', 'raw Ed25519 public key, 64 hex characters')
    .option('--cross-check', 'also verify every signature with tweetnacl and fail if the implementations disagree (says how long first)')
    .option('--max-bytes <n>', `refuse a journal larger than this many bytes (at most ${JOURNAL_FILE_MAX_BYTES}, the default)`)
    .option('--time-limit <seconds>', 'stop, and fail, when verification takes longer than this')
    .showHelpAfterError(INSPECT_USAGE)
    .action((journal: string | undefined, flags: InspectFlags) => runInspect(journal, flags));

  audit
    .command('list')
    .description("Table of the project's runs, newest first, checked with the project key")
    .option('--project <dir>', 'project directory (default: the current directory)')
    .option('--needs-attention', 'only the runs whose verdict is not complete (reconciliation needed, verification failed, or no key)')
    .option('--json', 'print JSON instead of a table (the same fields, whole strings)')
    .showHelpAfterError(LIST_USAGE)
    .action((flags: ListFlags) => runList(flags));
}

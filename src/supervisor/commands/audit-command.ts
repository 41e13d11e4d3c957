import path from 'node:path';
import type { Command } from 'commander';
import { PinnedDirectory, pinProject } from '../../shared/confinement/index.js';
import { isCanonicalUuid } from '../../shared/journal/journal-format.js';
import { isPublicKeyHex } from '../../shared/signing/signing-key.js';
import { inspectJournal } from '../../shared/journal/journal-verifier.js';
import { listRuns, type RunListing } from '../../shared/journal/journal-listing.js';

// `symbi audit inspect` (the read-only verifier: JSON report on stdout, exit
// 0 complete, 2 needs reconciliation, 1 failed or bad usage) and
// `symbi audit list` (the project's runs, newest first).

const INSPECT_USAGE = 'usage: symbi audit inspect JOURNAL --run-id UUID --public-key HEX [--cross-check]';
const LIST_USAGE = 'usage: symbi audit list [--project DIR] [--json]';

function usageError(usage: string, problem: string): void {
  process.stderr.write(`error: ${problem}\n${usage}\n`);
  process.exitCode = 1;
}

interface InspectFlags {
  runId?: string;
  publicKey?: string;
  crossCheck?: boolean;
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
  const { report, exitCode } = inspectJournal(path.resolve(journal), runId, flags.publicKey.toLowerCase(), {
    crossCheck: flags.crossCheck === true,
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (exitCode === 1) process.stderr.write(`verification failed: ${report.error?.message ?? 'unknown reason'}\n`);
  else if (exitCode === 2) process.stderr.write(`records verify, but reconciliation is needed: ${report.warnings.join('; ')}\n`);
  else process.stderr.write(`journal verifies and is complete (${report.records} records)\n`);
  process.exitCode = exitCode;
}

function formatTable(listing: RunListing): string {
  const header = ['RUN ID', 'AGENT', 'STARTED', 'LAST EVENT', 'OUTCOME', 'VERIFIES'];
  const rows = listing.runs.map((run) => [
    run.run_id,
    run.agent ?? '-',
    run.started_at ?? '-',
    run.last_event ?? '-',
    run.outcome,
    run.verdict === 'not_checked' ? 'no key' : run.verifies ? 'yes' : 'no',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const render = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  const lines = [`Runs in ${listing.governed_path} (newest first)`];
  if (listing.public_key) lines.push(`Project key: ${listing.public_key}`);
  if (rows.length === 0) lines.push('No runs recorded.');
  else lines.push(render(header), ...rows.map(render));
  lines.push('', listing.note);
  return `${lines.join('\n')}\n`;
}

function runList(flags: { project?: string; json?: boolean }): void {
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
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  for (const warning of listing.warnings) process.stderr.write(`warning: ${warning}\n`);
  process.stdout.write(flags.json ? `${JSON.stringify(listing, null, 2)}\n` : formatTable(listing));
}

export function registerAuditCommand(program: Command): void {
  const audit = program.command('audit').description('Verify and list the signed audit journals of governed runs');

  audit
    .command('inspect')
    .description('Verify one journal against a public key kept outside the project; exit 0 complete, 2 needs reconciliation, 1 failed')
    .argument('[journal]', 'path of the <run_id>.jsonl journal')
    .option('--run-id <uuid>', 'the run id the journal must belong to')
    .option('--public-key <hex>', 'raw Ed25519 public key, 64 hex characters')
    .option('--cross-check', 'also verify every signature with tweetnacl and fail if the implementations disagree')
    .showHelpAfterError(INSPECT_USAGE)
    .action((journal: string | undefined, flags: InspectFlags) => runInspect(journal, flags));

  audit
    .command('list')
    .description("Table of the project's runs, newest first, checked with the project key")
    .option('--project <dir>', 'project directory (default: the current directory)')
    .option('--json', 'print JSON instead of a table')
    .showHelpAfterError(LIST_USAGE)
    .action((flags: { project?: string; json?: boolean }) => runList(flags));
}

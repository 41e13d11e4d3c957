import fs from 'node:fs';
import { ConfinementError, type DescriptorRoute, fileFlags, type PinnedDirectory } from '../confinement/index.js';
import { checkPrivateDirectory, UnsafeStorageError } from '../storage/private-directory.js';
import { GOVERNED_COMPONENTS, governedDisplayPath } from '../storage/audit-storage.js';
import { JOURNAL_FILE_SUFFIX, type TerminalReason } from './journal-format.js';
import { describeRunEnding, type RunEnding } from './run-ending.js';
import { inspectJournal, type InspectVerdict, type RecordFormatName } from './journal-verifier.js';
import { loadSigningKeyFile } from '../storage/signing-key-store.js';
import { CANONICAL_UUID_PATTERN } from '../text/uuid.js';

// Summarises the runs recorded in a project's .symbiont/governed/, verifying
// each journal with the key found next to them. That key is only as
// trustworthy as the project folder: whoever can write the project can
// replace both, so the listing says so and points to an independent key.

const INDEPENDENT_KEY_NOTE =
  'Note: "verifies" uses the key stored in this project. Whoever can write the project can also replace that key, ' +
  'so evidence needs a public key recorded elsewhere: symbi audit inspect JOURNAL --run-id UUID --public-key HEX.';

export interface RunSummary {
  run_id: string;
  path: string;
  agent: string | null;
  agent_id: string | null;
  started_at: string | null;
  last_event: string | null;
  outcome: string;
  /** How the run ended, read from its records (run-ending.ts); null without a key or when verification failed. */
  ending: RunEnding | null;
  /** The Terminated record's reason as signed (any of Symbiont's TerminationReason values), null without one or when not checked. */
  terminal_reason: TerminalReason | null;
  /** `audit inspect`'s verdict with the project key: complete, requires_reconciliation or failed; not_checked without a key. */
  verdict: InspectVerdict | 'not_checked';
  /** True on every run the verifier says needs reconciliation, whatever its outcome; null when not checked. */
  requires_reconciliation: boolean | null;
  /** `symbiont-response-route`, or `symbi-mcp-0.1` for a journal written by an earlier version; null when unknown. */
  record_format: RecordFormatName | null;
  /** True when every complete record verifies with the project key (complete or awaiting reconciliation). */
  verifies: boolean;
  error: string | null;
}

export interface RunListing {
  governed_path: string;
  public_key: string | null;
  runs: RunSummary[];
  warnings: string[];
  note: string;
}

/** Entries of .symbiont/governed/ one listing reads; a project with more runs lists the first ones and says so. */
const JOURNAL_LISTING_MAX_ENTRIES = 1_000_000;

// `<agent_id>.<run_id>.jsonl` as Symbiont names journals, or `<run_id>.jsonl` as earlier versions of this server did.
const JOURNAL_NAME = new RegExp(`^(?:${CANONICAL_UUID_PATTERN}\\.)?(${CANONICAL_UUID_PATTERN})\\.jsonl$`);

/** Lists the project's runs, newest first. Read-only: creates nothing. Throws UnsafeStorageError when the storage cannot be opened. */
export function listRuns(project: PinnedDirectory): RunListing {
  const governedPath = governedDisplayPath(project);
  const listing: RunListing = { governed_path: governedPath, public_key: null, runs: [], warnings: [], note: INDEPENDENT_KEY_NOTE };
  let dirFd: number;
  try {
    dirFd = project.openDirectory(GOVERNED_COMPONENTS);
  } catch (err) {
    if (err instanceof ConfinementError && err.code === 'not_found') return listing;
    if (err instanceof ConfinementError && err.code === 'symlink') throw new UnsafeStorageError(`${governedPath}: unsafe storage: a component is a symlink`);
    throw new UnsafeStorageError(`${governedPath}: cannot open the audit storage: ${(err as Error).message}`);
  }
  try {
    try {
      checkPrivateDirectory(dirFd, governedPath);
    } catch (err) {
      listing.warnings.push((err as Error).message);
    }
    try {
      listing.public_key = loadSigningKeyFile(project.route, dirFd, governedPath, { create: false })?.publicKeyHex ?? null;
      if (listing.public_key === null) listing.warnings.push(`${governedPath}: no audit-signing.key; journals cannot be checked`);
    } catch (err) {
      listing.warnings.push((err as Error).message);
    }
    const listed = project.route.list(dirFd, JOURNAL_LISTING_MAX_ENTRIES);
    if (listed.truncated) listing.warnings.push(`${governedPath}: more than ${JOURNAL_LISTING_MAX_ENTRIES} entries; only the first were listed`);
    const names = listed.names
      .map((raw) => raw.toString('utf8'))
      .filter((name) => name.endsWith(JOURNAL_FILE_SUFFIX))
      .sort();
    for (const name of names) {
      const match = JOURNAL_NAME.exec(name);
      if (!match) {
        listing.warnings.push(`${governedPath}/${name}: not named <run id>.jsonl; skipped`);
        continue;
      }
      listing.runs.push(summarise(project.route, dirFd, governedPath, name, match[1]!, listing.public_key));
    }
  } finally {
    fs.closeSync(dirFd);
  }
  listing.runs.sort((a, b) => (b.started_at ?? '').localeCompare(a.started_at ?? '') || a.run_id.localeCompare(b.run_id));
  return listing;
}

function summarise(route: DescriptorRoute, dirFd: number, governedPath: string, name: string, runId: string, publicKey: string | null): RunSummary {
  const path = `${governedPath}/${name}`;
  if (publicKey === null) {
    return {
      run_id: runId,
      path,
      agent: null,
      agent_id: null,
      started_at: null,
      last_event: null,
      outcome: 'unknown (no key)',
      ending: null,
      terminal_reason: null,
      verdict: 'not_checked',
      requires_reconciliation: null,
      record_format: null,
      verifies: false,
      error: null,
    };
  }
  const { report, exitCode } = inspectJournal(path, runId, publicKey, { open: () => route.openAt(dirFd, name, fileFlags(route)) });
  let outcome: string;
  if (exitCode === 1) outcome = 'verification failed';
  // Whether the run needs reconciliation is its verdict, shown for every outcome, not only Completed ones.
  else
    outcome = describeRunEnding(report.ending ?? { kind: 'incomplete' })
      .replace(/\s+/g, ' ')
      .slice(0, 67);
  return {
    run_id: runId,
    path,
    agent: report.agent_name,
    agent_id: report.agent_id,
    started_at: report.started_at,
    last_event: report.last_event,
    outcome,
    ending: exitCode === 1 ? null : report.ending,
    terminal_reason: exitCode === 1 ? null : report.terminal_reason,
    verdict: report.verdict,
    requires_reconciliation: report.verdict === 'failed' ? null : report.requires_reconciliation,
    record_format: report.record_format,
    verifies: exitCode !== 1,
    error: report.error ? report.error.message : null,
  };
}

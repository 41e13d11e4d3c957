import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../../shared/storage/audit-storage.js';
import type { JournalWriter } from '../../shared/journal/journal-writer.js';
import { signingKeyFileChange } from '../../shared/storage/signing-key-change.js';
import type { PinnedSigningKey } from '../../shared/storage/signing-key-store.js';
import type { PinnedDirectory } from '../../shared/confinement/index.js';
import type { AuditReference, DurableAt, RunDefinition } from '../../shared/worker-protocol.js';
import { RunRecords } from '../../shared/journal/run-records.js';

export interface FinalisedRun {
  audit: AuditReference;
  terminalDurableAt: DurableAt;
}

/** Whether the owner created the run's journal, and if so whether its terminal record is durable. */
export type ClaimOutcome = { claimed: false } | { claimed: true; finalised: FinalisedRun | undefined };

let journalWriterModule: Promise<typeof import('../../shared/journal/journal-writer.js')> | undefined;

/**
 * Loads the journal writer into the supervisor thread. Called once the session
 * is up, so startup does not pay for it and the first early cancel does not wait for it.
 */
export function loadJournalWriter(): Promise<typeof import('../../shared/journal/journal-writer.js')> {
  journalWriterModule ??= import('../../shared/journal/journal-writer.js');
  return journalWriterModule;
}

/**
 * Finalises a run cancelled before its worker thread started it: `Started`, `BudgetOpened`,
 * `BudgetUpdated`, then `Terminated` with the cancel's `Error` (Symbiont's words), in one write and one
 * sync. A busy worker can take tens of milliseconds to pick up a queued task,
 * and the cancel's terminal record should not wait for that.
 *
 * Creating the journal (exclusively) is the claim: if the worker created it
 * first, the worker writes the run's records and this returns `claimed: false`.
 * A worker that loses the claim never writes to a journal it did not create;
 * the owner posts the cancel before claiming, so that worker also finds the
 * cancel waiting and reports the run as cancelled. Nothing is claimed when the
 * key file changed after startup: the worker then refuses the run, journal-less.
 */
export async function finaliseUnstartedRun(
  project: PinnedDirectory,
  pinnedKey: PinnedSigningKey,
  runId: string,
  definition: RunDefinition,
  message: string,
): Promise<ClaimOutcome> {
  let storage: AuditStorage | undefined;
  let writer: JournalWriter | undefined;
  try {
    const { JournalWriter } = await loadJournalWriter();
    storage = openRunAuditStorage(project, pinnedKey.key);
    if (signingKeyFileChange(storage.route, storage.governedDirFd, pinnedKey) !== undefined) return { claimed: false };
    try {
      writer = await JournalWriter.create(storage, runId, definition.principal, { urgent: true });
    } catch {
      // Created by the worker already, or storage that the worker cannot use either: its run, its report.
      return { claimed: false };
    }
    try {
      // Symbiont's route cancelled before its provider call: Started, BudgetOpened, BudgetUpdated, Terminated.
      const records = new RunRecords(definition, Date.now());
      const [budgetUpdated, terminated] = records.ending({ Error: { message } }, 0);
      await writer.appendTerminal(terminated, [...records.opening(), budgetUpdated], { urgent: true });
    } catch {
      return { claimed: true, finalised: undefined };
    }
    return {
      claimed: true,
      finalised: {
        audit: { run_id: runId, path: writer.path, public_key: storage.signingKey.publicKeyHex },
        terminalDurableAt: performance.timeOrigin + performance.now(),
      },
    };
  } catch {
    return { claimed: false };
  } finally {
    await writer?.close();
    if (storage !== undefined) closeAuditStorage(storage);
  }
}

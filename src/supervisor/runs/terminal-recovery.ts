import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../../shared/storage/audit-storage.js';
import type { JournalWriter } from '../../shared/journal/journal-writer.js';
import type { ProjectSigningKey } from '../../shared/signing/signing-key.js';
import type { PinnedDirectory } from '../../shared/confinement/index.js';
import { bareTerminal, RunBudget, runEnding } from '../../shared/journal/run-records.js';

/**
 * When a worker task dies before writing its terminal record, or the owner took a cancelled
 * run's journal (journal-handover.ts), the run's owner finishes the journal through a fresh
 * writer that continues the verified chain already on disk. Returns whether the terminal
 * record is durable.
 */
export async function recoverTerminalRecord(
  project: PinnedDirectory,
  signingKey: ProjectSigningKey,
  runId: string,
  principal: string,
  message: string,
): Promise<boolean> {
  let storage: AuditStorage | undefined;
  let writer: JournalWriter | undefined;
  try {
    storage = openRunAuditStorage(project, signingKey);
    // Only a crashed worker needs this path; the writer and verifier load then.
    const { JournalWriter } = await import('../../shared/journal/journal-writer.js');
    writer = await JournalWriter.resume(storage, runId, principal);
    const reason = { Error: { message } };
    const resumed = writer.resumed;
    if (resumed?.format !== 'symbiont-response-route') {
      // A journal of the older format, left by an earlier version of this server: its own terminal form.
      await writer.appendTerminal(reason, [], { urgent: true });
      return true;
    }
    // As Symbiont's route ends a run stopped mid-call: the budget (open reservations now count as
    // uncertain), then Terminated. Calls requested without a finish keep none: their effect is unknown.
    // If the budget record cannot be written, the terminal record is tried alone.
    const startedAtMs = resumed.startedAtMs ?? Date.now();
    const budget = resumed.budget ?? new RunBudget(principal);
    const [budgetUpdated, terminated] = runEnding(budget, startedAtMs, reason, 0);
    await writer.appendTerminal(terminated, [budgetUpdated], { urgent: true }).catch(async () => {
      await writer!.appendTerminal(bareTerminal(reason, startedAtMs), [], { urgent: true });
    });
    return true;
  } catch {
    return false;
  } finally {
    await writer?.close();
    if (storage !== undefined) closeAuditStorage(storage);
  }
}

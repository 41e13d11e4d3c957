import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../shared/storage/audit-storage.js';
import type { JournalWriter } from '../shared/journal/journal-writer.js';
import type { ProjectSigningKey } from '../shared/signing/signing-key.js';
import type { PinnedDirectory } from '../shared/confinement/index.js';
import { failedFinishEvent } from '../shared/journal/run-events.js';

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
    const { JournalWriter } = await import('../shared/journal/journal-writer.js');
    writer = await JournalWriter.resume(storage, runId, principal);
    const reason = { Error: { message } };
    // The open calls' finishes share the terminal record's write and sync; if they cannot be
    // written, the terminal record is tried alone, as the worker would (invocation.ts).
    const finishes = writer.unfinishedCalls.map((callId) => failedFinishEvent(callId, message));
    await writer.appendTerminal(reason, finishes, { urgent: true }).catch(async (err: unknown) => {
      if (finishes.length === 0) throw err;
      await writer!.appendTerminal(reason, [], { urgent: true });
    });
    return true;
  } catch {
    return false;
  } finally {
    await writer?.close();
    if (storage !== undefined) closeAuditStorage(storage);
  }
}

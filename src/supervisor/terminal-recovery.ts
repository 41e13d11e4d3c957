import { closeAuditStorage, openRunAuditStorage, type AuditStorage } from '../shared/storage/audit-storage.js';
import type { JournalWriter } from '../shared/journal/journal-writer.js';
import type { ProjectSigningKey } from '../shared/signing/signing-key.js';
import type { PinnedDirectory } from '../shared/confinement/index.js';
import { failedFinishEvent } from '../shared/journal/run-events.js';

/**
 * When a worker task dies before writing its terminal record, the run's owner
 * finishes the journal through a fresh writer that continues the verified
 * chain already on disk. Returns whether the terminal record is durable.
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
    for (const callId of writer.unfinishedCalls) {
      await writer.append(failedFinishEvent(callId, message)).catch(() => undefined);
    }
    await writer.appendTerminal({ Error: { message } }, [], { urgent: true });
    return true;
  } catch {
    return false;
  } finally {
    await writer?.close();
    if (storage !== undefined) closeAuditStorage(storage);
  }
}

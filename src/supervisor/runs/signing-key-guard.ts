import type { InvokeOutcome } from '../../shared/worker-protocol.js';
import type { OperatorLog } from '../operator/operator-log.js';
import type { AuditSnapshot, AuditStorageHandle } from '../startup/startup-snapshot.js';

// The supervisor's side of the signing key rule (signing-key-change.ts): it
// refuses every invocation when no key could be loaded at startup, and tells
// the operator when runs find the key file changed. The file itself is looked
// at by each run's worker, right before it creates the journal.

export interface SigningKeyGuard {
  /** Why no key was loaded at startup (every invocation is refused: agent-refusal.ts `audit_storage_unusable`), else undefined. */
  readonly unusable: string | undefined;
  /** Says each distinct change of the key file once on standard error, as runs report it. */
  noteOutcome(outcome: InvokeOutcome): void;
}

export function createSigningKeyGuard(storage: AuditStorageHandle | null, audit: AuditSnapshot, log: OperatorLog): SigningKeyGuard {
  const reason = audit.ready ? 'no signing key was loaded at startup' : audit.reason;
  let reported: string | undefined;
  return {
    unusable: storage === null ? reason : undefined,
    noteOutcome: (outcome) => {
      // A run that created its journal found the file unchanged; one refused for it says what changed.
      const change = outcome.ok ? undefined : outcome.keyFileChange;
      if (change === undefined && !outcome.ok && outcome.audit === undefined) return;
      if (change !== undefined && change !== reported) log.warn(`audit signing key changed: ${change}`, { event: 'audit.key_changed' });
      reported = change;
    },
  };
}

import { signingKeyFileChange } from '../shared/journal/signing-key-change.js';
import type { PinnedDirectory } from '../shared/pinned-directory.js';
import type { OperatorLog } from './operator-log.js';
import type { AuditSnapshot, AuditStorageHandle } from './startup-snapshot.js';

/**
 * Before each invocation: is the key this process signs with (pinned at
 * startup) still the one in the project? Returns the one-line refusal when it
 * is not, or when no key could be loaded at startup. Each distinct change is
 * said once on standard error; each refused call still gets the reason.
 */
export function createSigningKeyGuard(
  project: PinnedDirectory,
  storage: AuditStorageHandle | null,
  audit: AuditSnapshot,
  log: OperatorLog,
): () => string | undefined {
  if (storage === null) {
    const reason = audit.ready ? 'no signing key was loaded at startup' : audit.reason;
    return () => `audit storage was unusable at startup: ${reason}; restart the server once it is fixed`;
  }
  let reported: string | undefined;
  return () => {
    const change = signingKeyFileChange(project, storage.pinnedKey);
    if (change !== undefined && change !== reported) {
      log.warn(`audit signing key changed: ${change}`, { event: 'audit.key_changed' });
    }
    reported = change;
    return change;
  };
}

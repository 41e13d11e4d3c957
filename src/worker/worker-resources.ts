import type { PinnedDirectory } from '../shared/confinement/index.js';
import type { LoadedPolicySet } from '../shared/policy/policy-set.js';
import type { ProviderConfig } from '../shared/provider/provider-config.js';
import type { ProjectSigningKey } from '../shared/signing/signing-key.js';
import type { KeyFileAtStartup } from '../shared/storage/signing-key-change.js';

// What a worker thread holds for every run it performs, built once from its boot data (invoke-task.ts).

export interface WorkerResources {
  project: PinnedDirectory;
  policySet: LoadedPolicySet;
  provider: ProviderConfig;
  /** The key pinned at startup, which signs every record; the key file is never read for signing. */
  signingKey: ProjectSigningKey;
  /** The key file as it was at startup, looked at before each journal is created. */
  signingKeyFile: KeyFileAtStartup;
  /** Whether a journal append should sync in this thread now (invoke-task.ts: no other run is in flight on it); on libuv's pool when absent. */
  journalSyncInThread?: () => boolean;
}

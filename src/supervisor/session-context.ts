import type { PinnedDirectory } from '../shared/pinned-directory.js';
import type { OperatorLog } from './operator-log.js';
import type { AuditStorageHandle, StartupSnapshot } from './startup-snapshot.js';

// What every tool handler of one `symbi mcp` process shares: the pinned
// project, the frozen startup snapshot, the operator log and the audit storage
// (null when the storage was refused at startup: file tools keep working,
// invocations refuse).
export interface SessionContext {
  readonly project: PinnedDirectory;
  readonly snapshot: StartupSnapshot;
  readonly log: OperatorLog;
  readonly auditStorage: AuditStorageHandle | null;
  readonly shutdownGraceMs: number;
}

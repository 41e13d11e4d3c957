import type { PinnedDirectory } from '../../shared/confinement/index.js';
import type { OperatorLog } from '../operator/operator-log.js';
import type { DslAnalysisPool } from '../threads/dsl-analysis-pool.js';
import type { SourceAnalysis } from './source-analysis.js';
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
  /** The thread parse_dsl and the startup analysis run DSL text in (dsl-analysis-pool.ts). */
  readonly dslAnalysis: DslAnalysisPool;
  /** The startup analysis of the agent sources, run once on first use. */
  readonly sourceAnalysis: () => Promise<SourceAnalysis>;
}

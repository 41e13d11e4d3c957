import { AGENTS_MD_MAX_BYTES } from '../../shared/limits.js';
import { ConfinementError, type DescriptorAccess, PinnedDirectory } from '../../shared/confinement/index.js';
import { extractAgentsMdGuidance, type AgentsMdGuidance } from '../../shared/agents-md.js';
import type { RegistryEntry } from '../../shared/dsl/conversational-definition.js';
import { loadPolicySet, type LoadedPolicySet, type PolicyFileInput } from '../../shared/policy/policy-set.js';
import { openAuditStorage } from '../../shared/storage/audit-storage.js';
import { OtherWritersError, refuseOtherWriters } from '../../shared/storage/directory-ownership.js';
import { discoverAgentSources, type DiscoveryResult, type SkippedSource } from './agent-discovery.js';
import { collectPolicyFiles } from './policy-file-discovery.js';
import { descriptorState, takeChangeReference, type ChangeReference } from './project-change-watch.js';

// The startup snapshot: everything the server learns about the project when
// it starts, taken once and frozen. Files added or changed later cannot be
// invoked until restart. It is plain data (no descriptors wrapped in classes,
// no functions) so pieces of it can be posted to worker threads.

export type { AgentSummary } from '../../shared/dsl/source-summary.js';

export type AgentsMdSnapshot =
  | { present: true; bytes: number; text: string; guidance: AgentsMdGuidance | null }
  | { present: false; reason: string; missing: boolean };

export type AuditSnapshot =
  | { ready: true; publicKeyHex: string; governedPath: string; governedDirFd: number }
  | { ready: false; reason: string; notCreated?: true };

export interface StartupSnapshot {
  readonly takenAt: string;
  readonly project: { readonly fd: number; readonly path: string };
  /**
   * Whether project files can be read at all. When not, nothing below was read:
   * the registry is empty, AGENTS.md and the audit storage are unavailable and
   * the policy set denies everything, each naming this reason.
   */
  readonly projectAccess: DescriptorAccess;
  /**
   * Registry entries as the DSL module expects them, one per discovered source.
   * Their analysis (source-analysis.ts) may still leave some out: what
   * list_agents and invoke_agent use is the analysed registry.
   */
  readonly registry: readonly RegistryEntry[];
  /** Files discovery left out; the analysis may add more. */
  readonly skipped: readonly SkippedSource[];
  readonly limitsHit: readonly string[];
  readonly agentsDirectory: { readonly present: boolean; readonly problem?: string; readonly entriesInspected: number; readonly retainedBytes: number };
  readonly agentsMd: AgentsMdSnapshot;
  readonly policy: { readonly files: readonly string[]; readonly set: LoadedPolicySet };
  readonly audit: AuditSnapshot;
}

/** What openAuditStorage returned, kept outside the snapshot because it holds a signing function. */
export type AuditStorageHandle = ReturnType<typeof openAuditStorage>;

export interface SnapshotResult {
  snapshot: StartupSnapshot;
  auditStorage: AuditStorageHandle | null;
  /** What the change watch compares with: the files as this snapshot read them (project-change-watch.ts). */
  changeReference: ChangeReference;
}

/** Called with each file the snapshot reads, on the descriptor its bytes are read from, before they are read. */
export type ReadRecorder = (file: string, fd: number) => void;

// AGENTS.md is guidance the model is given: one that another user could write is left out.
function readAgentsMd(project: PinnedDirectory, record?: ReadRecorder): AgentsMdSnapshot {
  const refuse = refuseOtherWriters(`${project.displayPath}/AGENTS.md`);
  try {
    const { text, bytes } = project.readTextFile('AGENTS.md', AGENTS_MD_MAX_BYTES, {}, (fd, stat) => {
      record?.('AGENTS.md', fd);
      refuse(fd, stat);
    });
    return { present: true, bytes, text, guidance: extractAgentsMdGuidance(text) };
  } catch (err) {
    if (err instanceof OtherWritersError) return { present: false, reason: `AGENTS.md: ${err.message}`, missing: false };
    if (err instanceof ConfinementError) return { present: false, reason: err.message, missing: err.code === 'not_found' };
    return { present: false, reason: 'AGENTS.md: cannot be read', missing: false };
  }
}

function openAudit(project: PinnedDirectory): { audit: AuditSnapshot; storage: AuditStorageHandle | null } {
  try {
    const storage = openAuditStorage(project);
    return {
      audit: { ready: true, publicKeyHex: storage.signingKey.publicKeyHex, governedPath: storage.governedPath, governedDirFd: storage.governedDirFd },
      storage,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { audit: { ready: false, reason: message }, storage: null };
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

// Without descriptor-relative access nothing can be read, and an unreadable
// project must never look like an empty one: no agents/ "absent", no AGENTS.md
// "missing", no policy files "missing" (which would grant the default
// permission). Every part carries the reason instead; the policy set denies all.
function unavailableSnapshot(project: PinnedDirectory, reason: string): SnapshotResult {
  const policyInputs: PolicyFileInput[] = [{ path: 'policies/', error: `policies/: ${reason}` }];
  const snapshot: StartupSnapshot = {
    takenAt: new Date().toISOString(),
    project: { fd: project.fd, path: project.displayPath },
    projectAccess: { available: false, reason },
    registry: [],
    skipped: [],
    limitsHit: [],
    agentsDirectory: { present: false, problem: `agents/ cannot be read: ${reason}`, entriesInspected: 0, retainedBytes: 0 },
    agentsMd: { present: false, reason: `AGENTS.md cannot be read: ${reason}`, missing: false },
    policy: { files: [], set: loadPolicySet(policyInputs) },
    audit: { ready: false, reason },
  };
  return { snapshot: deepFreeze(snapshot), auditStorage: null, changeReference: new Map() };
}

/** The project's policy set as the server loads it at startup (`symbi policy` loads it here too). */
export function readPolicySet(project: PinnedDirectory, record?: ReadRecorder): StartupSnapshot['policy'] {
  const policyInputs: PolicyFileInput[] = collectPolicyFiles(project, record);
  return { files: policyInputs.map((f) => f.path), set: loadPolicySet(policyInputs) };
}

/** The registry entries of the discovered agent sources. */
export function registryOf(discovery: DiscoveryResult): RegistryEntry[] {
  return discovery.sources.map(({ stem, file, text }) => ({ stem, file, text }));
}

export function takeStartupSnapshot(project: PinnedDirectory): SnapshotResult {
  if (!project.access.available) return unavailableSnapshot(project, project.access.reason);
  // The change watch's reference: the project as looked at now, each file then as this snapshot
  // reads it (the state of the descriptor its bytes come from), so an edit made after a file was
  // read is named, however late the watch starts.
  const changeReference = takeChangeReference(project);
  const record: ReadRecorder = (file, fd) => changeReference.set(file, descriptorState(fd));
  const discovery = discoverAgentSources(project, record);
  const registry = registryOf(discovery);
  const policy = readPolicySet(project, record);
  // A folder without agents/ is not a project (often a project's subfolder the server was
  // started in by mistake): nothing is created in it, not even the audit storage.
  const { audit, storage } =
    discovery.agentsDirectoryPresent || discovery.directoryProblem !== undefined
      ? openAudit(project)
      : {
          audit: { ready: false as const, reason: 'not created, as this folder has no agents/ (nothing to invoke or journal)', notCreated: true as const },
          storage: null,
        };
  const snapshot: StartupSnapshot = {
    takenAt: new Date().toISOString(),
    project: { fd: project.fd, path: project.displayPath },
    projectAccess: project.access,
    registry,
    skipped: discovery.skipped,
    limitsHit: discovery.limitsHit,
    agentsDirectory: {
      present: discovery.agentsDirectoryPresent,
      ...(discovery.directoryProblem ? { problem: discovery.directoryProblem } : {}),
      entriesInspected: discovery.entriesInspected,
      retainedBytes: discovery.retainedBytes,
    },
    agentsMd: readAgentsMd(project, record),
    policy,
    audit,
  };
  // A first start has just created .symbiont/: reserve it too (reserved-directories.ts).
  project.recordReservedDirectories();
  return { snapshot: deepFreeze(snapshot), auditStorage: storage, changeReference };
}

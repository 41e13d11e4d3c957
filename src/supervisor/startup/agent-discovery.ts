import fs from 'node:fs';
import { ConfinementError, decodeUtf8Strict, type DescriptorRoute, PinnedDirectory, readTextFileAt } from '../../shared/confinement/index.js';
import { DISCOVERY_MAX_ENTRIES, DISCOVERY_MAX_RETAINED_BYTES, DSL_FILE_MAX_BYTES } from '../../shared/limits.js';
import { OtherWritersError, refuseOtherWriters, trustedWritersProblem } from '../../shared/storage/directory-ownership.js';

// Source discovery: the agent sources in agents/ (not recursive) read once at
// startup through the pinned directory. Every file left out is recorded with
// the reason so the operator can see it on standard error. An agent file is
// the model's system message and the Cedar context, so one that another user
// could write is left out, and an agents/ that another user could write (add
// or replace files in) loads no agents (directory-ownership.ts).

const AGENTS_DIRECTORY = 'agents';
const SOURCE_EXTENSIONS = ['.symbi', '.dsl'] as const;

/** Structurally the DSL module's RegistryEntry: stem, project-relative file, full text. */
export interface DiscoveredSource {
  stem: string;
  file: string;
  text: string;
  bytes: number;
}

export interface SkippedSource {
  file: string;
  reason: string;
}

export interface DiscoveryResult {
  sources: DiscoveredSource[];
  skipped: SkippedSource[];
  /** One line per limit that stopped discovery early. */
  limitsHit: string[];
  /** Why agents/ itself could not be read, when it could not (absent is not an error). */
  directoryProblem?: string;
  agentsDirectoryPresent: boolean;
  entriesInspected: number;
  retainedBytes: number;
}

/** The filename stem of an agent source (`foo` for foo.symbi or foo.dsl), or null for any other name. */
export function sourceStem(name: string): string | null {
  for (const ext of SOURCE_EXTENSIONS) {
    if (name.endsWith(ext) && name.length > ext.length) return name.slice(0, -ext.length);
  }
  return null;
}

interface ListedNames {
  names: string[];
  undecodable: number;
  inspected: number;
  truncated: boolean;
}

function listDirectory(route: DescriptorRoute, dirFd: number): ListedNames {
  const listed = route.list(dirFd, DISCOVERY_MAX_ENTRIES);
  const names: string[] = [];
  let undecodable = 0;
  for (const raw of listed.names) {
    try {
      names.push(decodeUtf8Strict(raw, 'entry'));
    } catch {
      undecodable++;
    }
  }
  // Directory order is arbitrary; sorting makes which files fit the limits predictable.
  names.sort();
  return { names, undecodable, inspected: listed.names.length, truncated: listed.truncated };
}

/** Reads agents/*.symbi and *.dsl once, through the pinned directory, within the discovery limits; `record` sees each file's descriptor before it is read. */
export function discoverAgentSources(project: PinnedDirectory, record?: (file: string, fd: number) => void): DiscoveryResult {
  const result: DiscoveryResult = {
    sources: [],
    skipped: [],
    limitsHit: [],
    agentsDirectoryPresent: false,
    entriesInspected: 0,
    retainedBytes: 0,
  };
  let dirFd: number;
  try {
    dirFd = project.openDirectory([AGENTS_DIRECTORY]);
  } catch (err) {
    if (err instanceof ConfinementError && err.code === 'not_found') return result;
    result.directoryProblem =
      err instanceof ConfinementError ? `${AGENTS_DIRECTORY}/ ${describeDirectoryProblem(err.code)}` : `${AGENTS_DIRECTORY}/ cannot be opened`;
    return result;
  }
  result.agentsDirectoryPresent = true;
  try {
    const writers = trustedWritersProblem(dirFd, `${project.displayPath}/${AGENTS_DIRECTORY}`);
    if (writers !== undefined) {
      result.directoryProblem = `${AGENTS_DIRECTORY}/ can be changed by another user, so no agents were loaded: ${writers}`;
      return result;
    }
    const listed = listDirectory(project.route, dirFd);
    result.entriesInspected = listed.inspected;
    if (listed.truncated) {
      result.limitsHit.push(`directory entry limit: agents/ has more than ${DISCOVERY_MAX_ENTRIES} entries; discovery stopped after ${DISCOVERY_MAX_ENTRIES}`);
    }
    if (listed.undecodable > 0) {
      result.skipped.push({ file: 'agents/<undecodable name>', reason: `${listed.undecodable} file name(s) are not valid UTF-8` });
    }
    let retainLimitReached = false;
    for (const name of listed.names) {
      const stem = sourceStem(name);
      if (stem === null) continue;
      const file = `${AGENTS_DIRECTORY}/${name}`;
      if (name.startsWith('.')) {
        result.skipped.push({ file, reason: 'hidden file names are not read' });
        continue;
      }
      if (retainLimitReached) {
        result.skipped.push({ file, reason: `retained-bytes limit of ${DISCOVERY_MAX_RETAINED_BYTES} bytes already reached` });
        continue;
      }
      let text: string;
      let bytes: number;
      try {
        const refuse = refuseOtherWriters(`${project.displayPath}/${file}`);
        ({ text, bytes } = readTextFileAt(project.route, dirFd, name, DSL_FILE_MAX_BYTES, file, (fd, stat) => {
          record?.(file, fd);
          refuse(fd, stat);
        }));
      } catch (err) {
        const reason = err instanceof ConfinementError ? stripShownPath(err.message, file) : err instanceof OtherWritersError ? err.message : 'cannot be read';
        result.skipped.push({ file, reason });
        continue;
      }
      if (result.retainedBytes + bytes > DISCOVERY_MAX_RETAINED_BYTES) {
        retainLimitReached = true;
        result.limitsHit.push(`retained-bytes limit: agent sources exceed ${DISCOVERY_MAX_RETAINED_BYTES} bytes; ${file} and later files were left out`);
        result.skipped.push({ file, reason: `retained-bytes limit of ${DISCOVERY_MAX_RETAINED_BYTES} bytes reached` });
        continue;
      }
      result.retainedBytes += bytes;
      result.sources.push({ stem, file, text, bytes });
    }
  } finally {
    fs.closeSync(dirFd);
  }
  return result;
}

function describeDirectoryProblem(code: ConfinementError['code']): string {
  switch (code) {
    case 'symlink':
      return 'is a symlink; symlinks are never followed, so no agents were loaded';
    case 'not_directory':
      return 'is not a directory, so no agents were loaded';
    case 'invalid_path':
      // The only refusal of a plain name: agents/ is policies/ or .symbiont/ under another name (reserved-directories.ts).
      return 'is a reserved directory (policies/ or .symbiont/) reached under another name, so no agents were loaded';
    default:
      return `cannot be opened (${code}), so no agents were loaded`;
  }
}

/** Confinement messages start with the path; the summary already shows it. */
function stripShownPath(message: string, file: string): string {
  const prefix = `${file}: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

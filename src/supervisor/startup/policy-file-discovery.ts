import fs from 'node:fs';
import { POLICY_DISCOVERY_MAX_ENTRIES, POLICY_FILE_MAX_BYTES } from '../../shared/limits.js';
import { ConfinementError, decodeUtf8Strict, PinnedDirectory, readTextFileAt } from '../../shared/confinement/index.js';
import { OtherWritersError, projectDirectoriesProblem, refuseOtherWriters, trustedWritersProblem } from '../../shared/storage/directory-ownership.js';
import { policyModeProblem } from '../../shared/policy/policy-file-modes.js';
import type { PolicyFileInput } from '../../shared/policy/policy-set.js';

// Collects the Cedar policy files in the order the policy loader expects:
// policies/*.cedar sorted by name, then policies/mcp-server/*.cedar sorted.
// Anything that cannot be read cleanly, or that another user could rewrite
// (policy-file-modes.ts: no group or other write bit; then the writer check
// of directory-ownership.ts, which reads ACLs by descriptor, counts a folder's
// inheritable entries and names who writes), becomes an input with an error, which the loader
// turns into deny-all: a broken configuration never falls back to the default
// permission. So does a project root, or a directory above it, that another
// user could change (directory-ownership.ts): checked whether or not policies/
// exists, since renaming it away is the attack.

const POLICY_EXTENSION = '.cedar';

function openPolicyDirectory(project: PinnedDirectory, components: string[]): number | PolicyFileInput | null {
  try {
    return project.openDirectory(components);
  } catch (err) {
    if (err instanceof ConfinementError && err.code === 'not_found') return null;
    const shown = `${components.join('/')}/`;
    const why: string = err instanceof ConfinementError ? err.code : 'io';
    const text = why === 'symlink' ? 'is a symlink; symlinks are never followed' : why === 'not_directory' ? 'is not a directory' : `cannot be opened (${why})`;
    return { path: shown, error: `${shown} ${text}` };
  }
}

function readPolicyDirectory(project: PinnedDirectory, dirFd: number, prefix: string, out: PolicyFileInput[], record?: FileRecorder): void {
  const names: string[] = [];
  const listed = project.route.list(dirFd, POLICY_DISCOVERY_MAX_ENTRIES);
  if (listed.truncated) {
    out.push({ path: `${prefix}/`, error: `${prefix}/ has more than ${POLICY_DISCOVERY_MAX_ENTRIES} entries; the policy set cannot be read completely` });
    return;
  }
  for (const raw of listed.names) {
    let name: string;
    try {
      name = decodeUtf8Strict(raw, 'entry');
    } catch {
      out.push({ path: `${prefix}/<undecodable name>`, error: `${prefix}/ holds a file name that is not valid UTF-8` });
      continue;
    }
    if (name.endsWith(POLICY_EXTENSION) && !name.startsWith('.')) names.push(name);
  }
  names.sort();
  for (const name of names) {
    const shown = `${prefix}/${name}`;
    try {
      const refuse = refuseOtherWriters(`${project.displayPath}/${shown}`, (stat) => policyModeProblem(stat, `${project.displayPath}/${shown}`));
      const file = readTextFileAt(project.route, dirFd, name, POLICY_FILE_MAX_BYTES, shown, (fd, stat) => {
        record?.(shown, fd);
        refuse(fd, stat);
      });
      out.push({ path: shown, text: file.text });
    } catch (err) {
      if (err instanceof OtherWritersError) out.push({ path: shown, refused: err.message });
      else out.push({ path: shown, error: err instanceof ConfinementError ? err.message : `${shown}: cannot be read` });
    }
  }
}

/** Sees each policy file's descriptor before its bytes are read (the change watch's reference, startup-snapshot.ts). */
type FileRecorder = (file: string, fd: number) => void;

/** The policy files of the project, in load order, each with its text or the reason it cannot be trusted. */
export function collectPolicyFiles(project: PinnedDirectory, record?: FileRecorder): PolicyFileInput[] {
  const out: PolicyFileInput[] = [];
  const directoriesProblem = projectDirectoriesProblem(project);
  if (directoriesProblem !== undefined) out.push({ path: 'project directories', refused: directoriesProblem });
  for (const components of [['policies'], ['policies', 'mcp-server']]) {
    const opened = openPolicyDirectory(project, components);
    if (opened === null) {
      // No policies/ means no policies/mcp-server/ either.
      if (components.length === 1) break;
      continue;
    }
    if (typeof opened !== 'number') {
      out.push(opened);
      if (components.length === 1) break;
      continue;
    }
    try {
      const stat = fs.fstatSync(opened);
      const absolute = `${project.displayPath}/${components.join('/')}`;
      const problem = policyModeProblem(stat, absolute) ?? trustedWritersProblem(opened, absolute, stat);
      if (problem !== undefined) out.push({ path: `${components.join('/')}/`, refused: problem });
      readPolicyDirectory(project, opened, components.join('/'), out, record);
    } finally {
      fs.closeSync(opened);
    }
  }
  return out;
}

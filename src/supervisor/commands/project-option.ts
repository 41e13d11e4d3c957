import path from 'node:path';
import { type PinnedDirectory, pinProject, ReservedDirectoriesError } from '../../shared/confinement/index.js';

// The `--project DIR` option of the commands that serve or examine a project
// (`symbi mcp`, `symbi check`, `symbi policy`): one rule for what it accepts and
// one wording for its usage errors, which exit with USAGE_EXIT.

export const USAGE_EXIT = 2;

/** Writes "symbi COMMAND: message" on standard error and exits with the usage status. */
export function usageError(command: string, message: string): never {
  process.stderr.write(`symbi ${command}: ${message}\n`);
  process.exit(USAGE_EXIT);
}

/** Pins `dir` as the project (confinement/index.ts), or exits with a one-line usage error naming the problem. */
export function pinProjectOption(dir: string, command: string): PinnedDirectory {
  if (dir.length === 0 || dir.includes('\0')) usageError(command, '--project needs a directory path');
  try {
    return pinProject(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const shown = path.resolve(dir);
    // policies/ or .symbiont/ could not all be recorded by identity (reserved-directories.ts): never serve with part of them.
    if (err instanceof ReservedDirectoriesError) usageError(command, `--project ${shown}: ${err.message}`);
    if (code === 'ENOTDIR') usageError(command, `--project ${shown}: is not a directory`);
    if (code === 'ENOENT') usageError(command, `--project ${shown}: no such directory`);
    if (code === 'EACCES') usageError(command, `--project ${shown}: permission denied`);
    usageError(command, `--project ${shown}: cannot be opened as a directory (${code ?? 'error'})`);
  }
}

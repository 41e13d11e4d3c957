import fs from 'node:fs';
import type { DescriptorRoute, PinnedDirectory } from '../confinement/index.js';
import { projectDirectoriesProblem } from './directory-ownership.js';
import { openPrivateDirectory, UnsafeStorageError } from './private-directory.js';
import { pinSigningKeyFile } from './signing-key-store.js';
import type { PinnedSigningKey } from './signing-key-store.js';
import type { ProjectSigningKey } from '../signing/signing-key.js';

// The audit storage of one project: the private .symbiont/governed/ directory
// (held open by descriptor, so a later rename or symlink swap of the path
// changes nothing we write) and the project signing key found there.
//
// Open it in the thread that writes the journal: the descriptor number is
// valid process-wide, but the key (a KeyObject behind a function) does not
// cross a postMessage boundary. The key file is read once, at startup
// (openAuditStorage); every run after that opens the directory with the
// startup key (openRunAuditStorage), so replacing or deleting the file later
// can never change the key a journal is signed with (signing-key-change.ts).

/** The error every storage refusal throws (one line naming the path and the problem). */
export { UnsafeStorageError };

export const GOVERNED_COMPONENTS = ['.symbiont', 'governed'] as const;

export interface AuditStorage {
  /** Descriptor of .symbiont/governed/ (close with closeAuditStorage). */
  governedDirFd: number;
  /** Absolute path of .symbiont/governed for display. */
  governedPath: string;
  /** The confinement route every file in the storage is reached through. */
  route: DescriptorRoute;
  signingKey: ProjectSigningKey;
}

/** Absolute path of the project's .symbiont/governed, for messages. */
export function governedDisplayPath(project: PinnedDirectory): string {
  return [project.displayPath, ...GOVERNED_COMPONENTS].join('/');
}

/** The storage as opened at startup, with the key pinned for the life of the process. */
export interface StartupAuditStorage extends AuditStorage {
  pinnedKey: PinnedSigningKey;
}

/**
 * Startup (and the offline commands): checks the directories that hold the
 * project (directory-ownership.ts), creates (0700) or checks .symbiont/ and
 * .symbiont/governed/, then loads or creates audit-signing.key. Throws
 * UnsafeStorageError before anything else is written when the storage is not private.
 */
export function openAuditStorage(project: PinnedDirectory): StartupAuditStorage {
  // Another user who can rename .symbiont/ away could swap in storage of their own (directory-ownership.ts).
  const directoriesProblem = projectDirectoriesProblem(project);
  if (directoriesProblem !== undefined) throw new UnsafeStorageError(`${governedDisplayPath(project)}: unsafe storage: ${directoriesProblem}`);
  const governedDirFd = openPrivateDirectory(project, GOVERNED_COMPONENTS, { create: true });
  const governedPath = governedDisplayPath(project);
  try {
    const pinnedKey = pinSigningKeyFile(project.route, governedDirFd, governedPath);
    return { governedDirFd, governedPath, route: project.route, signingKey: pinnedKey.key, pinnedKey };
  } catch (err) {
    fs.closeSync(governedDirFd);
    throw err;
  }
}

/**
 * One run: opens .symbiont/governed/ with the same checks, but signs with the
 * key pinned at startup and never reads or creates the key file. Nor does it
 * create the directories: they exist since startup, and a storage removed since
 * is refused rather than made again empty.
 */
export function openRunAuditStorage(project: PinnedDirectory, signingKey: ProjectSigningKey): AuditStorage {
  return {
    governedDirFd: openPrivateDirectory(project, GOVERNED_COMPONENTS, { create: false }),
    governedPath: governedDisplayPath(project),
    route: project.route,
    signingKey,
  };
}

/** Closes the storage's directory descriptor (idempotent). */
export function closeAuditStorage(storage: AuditStorage): void {
  try {
    fs.closeSync(storage.governedDirFd);
  } catch {
    // already closed
  }
}

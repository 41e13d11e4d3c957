import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Temporary projects on disk for the tests: created under the system's
// temporary directory, filled with the files a test names, removed after.

/** A fresh empty directory under the system's temporary directory, named from `prefix`. */
export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A fresh temporary project holding `files` (relative path -> text or bytes). */
export function makeProject(files: Record<string, string | Uint8Array>, prefix = 'symbi-project-'): string {
  const dir = tempDir(prefix);
  writeFiles(dir, files);
  return dir;
}

/** Writes `files` (relative path -> text or bytes) under `dir`, creating the folders they need. */
export function writeFiles(dir: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(dir, rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content);
  }
}

/** Removes a temporary project (or any directory a test made) and everything in it. */
export function removeProject(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (the folder holding package.json). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The `symbi` command every test runs: the clone's bin/symbi.js, or the file named by
 * SYMBI_TEST_SERVER_ENTRY, so the same suite can run against an installed package
 * (`node_modules/symbi-mcp/bin/symbi.js` after `npm install <packed tarball>`, as .ci/run does).
 */
export const symbiBin = serverEntry();

function serverEntry(): string {
  const configured = process.env.SYMBI_TEST_SERVER_ENTRY;
  if (configured === undefined || configured === '') return path.join(repoRoot, 'bin', 'symbi.js');
  if (!path.isAbsolute(configured)) throw new Error(`SYMBI_TEST_SERVER_ENTRY must be an absolute path to a symbi bin file, not "${configured}"`);
  if (!fs.existsSync(configured)) throw new Error(`SYMBI_TEST_SERVER_ENTRY names ${configured}, which does not exist`);
  return configured;
}

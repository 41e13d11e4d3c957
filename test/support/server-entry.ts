import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The repository root: the nearest folder above this module that holds package.json. The test
 * files run compiled from .test-build/ (scripts/build-test-files.ts writes it for `npm run
 * test:files`) or as TypeScript through tsx, so a path counted up from a test's own folder would
 * differ between the two; paths a test reads (fixtures, docs, src) start here.
 */
export const repoRoot = nearestPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

function nearestPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json in ${from} or any folder above it`);
  }
}

/**
 * The Node.js arguments that run a script of the repository from a test, as the test itself runs:
 * the compiled .js beside the test's own build (.test-build, plain node) when the test runs
 * compiled, or the .ts with tsx when it runs from TypeScript. `relative` is the script's path from
 * the calling test's folder, without its extension: `scriptArgs(import.meta.url, '../support/key-store-racer')`.
 */
export function scriptArgs(testUrl: string, relative: string): string[] {
  const here = fileURLToPath(testUrl);
  const compiled = here.endsWith('.js');
  const script = path.join(path.dirname(here), `${relative}.${compiled ? 'js' : 'ts'}`);
  return compiled ? [script] : ['--import', 'tsx', script];
}

/** The URL of a module of the build in dist/ (`npm run build`), as `import()` takes it: `builtModule('shared/limits.js')`. */
export function builtModule(module: string): string {
  return pathToFileURL(path.join(repoRoot, 'dist', module)).href;
}

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

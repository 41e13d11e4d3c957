// `npm run test:files`'s first step: the test files as JavaScript, in .test-build/, so that node:test
// runs them without a TypeScript loader. On Node.js 20 a loader's hooks run on a thread of their own
// that every test process starts and every import crosses; tsx cost about 0.27 s of processor time
// per test file that way (docs/benchmarks.md, "How long npm test takes").
//
// Each file of test/ and scripts/ (which a test may import) is transpiled on its own by esbuild, as
// tsx does, with a source map, so a failure points into the .ts file. src/ is not transpiled again:
// .test-build/src is a link to dist/, which `npm run build` compiled from the same sources, so a
// test's `../src/...` import loads the build's module (whose threads start dist/'s worker files) and
// the package root is found two folders up from it, as from dist/. test/fixtures/ stays where it is:
// tests name fixtures from the repository root (test/support/server-entry.ts's repoRoot).
//
// `node --import tsx --test test/<file>.test.ts` still runs one file from its TypeScript.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(repoRoot, '.test-build');

/** Every .ts file under `dir`, relative to the repository root, leaving out test/fixtures/. */
function typeScriptFiles(dir: string): string[] {
  return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return relative === path.join('test', 'fixtures') ? [] : typeScriptFiles(relative);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [relative] : [];
  });
}

if (!fs.existsSync(path.join(repoRoot, 'dist', 'shared'))) {
  process.stderr.write('build-test-files: dist/ is missing; run `npm run build` first (the tests load src/ from its build)\n');
  process.exit(1);
}
fs.rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: repoRoot,
  entryPoints: [...typeScriptFiles('test'), ...typeScriptFiles('scripts')],
  outbase: '.',
  outdir,
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
fs.symlinkSync(path.join('..', 'dist'), path.join(outdir, 'src'));

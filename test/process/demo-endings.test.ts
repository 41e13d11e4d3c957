import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { suiteScratch } from '../support/suite-fixture.js';
import { repoRoot, symbiBin } from '../support/server-entry.js';

// How the demo ends (issue 34): a run removes its copy of the example whatever the outcome, unless
// --keep, which keeps it and prints `symbi audit` commands that work as printed; a machine it cannot
// run on (loopback down, no port, temporary folder full or read-only) gets one line naming the cause
// and the fix, exit 1, with nothing left behind. Each run gets a TMPDIR of its own to count leftovers in.

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const packageRoot = path.resolve(path.dirname(symbiBin), '..');
const inNodeModules = `${path.sep}node_modules${path.sep}`;
const installed = packageRoot.includes(inNodeModules);
// Where a person starts `symbi demo`: the clone's root, or the folder the package is installed in.
const startDir = installed ? packageRoot.slice(0, packageRoot.lastIndexOf(inNodeModules)) : packageRoot;
// An installed copy is named by its bin's absolute path (symbi-mcp is not on the test's PATH), never as
// `npx -y symbi-mcp`, a name on the public registry that is not ours until it is published.
const spelledSymbi = installed ? `node ${fs.realpathSync(symbiBin)}` : 'node bin/symbi.js';

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function env(tmp: string): Record<string, string> {
  return { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? tmp, TMPDIR: tmp, NO_COLOR: '1' };
}

function run(command: string, args: string[], cwd: string, tmp: string): Promise<Ended> {
  const began = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: env(tmp), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - began }));
  });
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function demoFolders(tmp: string): string[] {
  return fs.readdirSync(tmp).filter((name) => name.startsWith('symbi-demo-'));
}

function shown(ended: Ended): string {
  return `--- stdout ---\n${ended.stdout.slice(-4000)}\n--- stderr ---\n${ended.stderr.slice(-2000)}`;
}

/** The `symbi audit` lines under "What to run next", as printed. */
function auditCommands(stdout: string): string[] {
  const next = stdout.slice(stdout.indexOf('What to run next'));
  return [...next.matchAll(/^ {3}(\S.* audit (?:list|inspect) .*)$/gm)].map((m) => m[1]!);
}

/** Runs each printed command through the shell from `cwd`, as a person pasting it would. */
function assertRunAsPrinted(commands: string[], cwd: string, tmp: string): void {
  for (const line of commands) {
    const result = spawnSync('sh', ['-c', line], { cwd, env: env(tmp), encoding: 'utf8', timeout: 60_000 });
    assert.equal(result.status, 0, `${line}\nexits 0 from ${cwd}\n${result.stdout}${result.stderr}`);
  }
}

describe('how the demo ends', () => {
  const ownTmp = suiteScratch('symbi-demo-tmp-');

  it('symbi demo removes its copy after a successful run, and says --keep keeps it', { timeout: 120_000 }, async () => {
    const tmp = ownTmp();
    const ended = await run(process.execPath, [symbiBin, 'demo'], startDir, tmp);
    assert.equal(ended.code, 0, shown(ended));
    assert.match(
      ended.stdout,
      new RegExp(`^The copy of the example was removed; \`${escapeRegExp(spelledSymbi)} demo --keep\` keeps it, for the symbi audit commands\\.$`, 'm'),
      shown(ended),
    );
    assert.deepEqual(auditCommands(ended.stdout), [], 'no audit commands for a copy that is gone');
    assert.deepEqual(demoFolders(tmp), []);
  });

  it('symbi demo --keep keeps one copy, and its audit commands exit 0 as printed', { timeout: 120_000 }, async () => {
    const tmp = ownTmp();
    const ended = await run(process.execPath, [symbiBin, 'demo', '--keep'], startDir, tmp);
    assert.equal(ended.code, 0, shown(ended));
    const kept = demoFolders(tmp);
    assert.equal(kept.length, 1, `one symbi-demo-* folder in ${tmp}: ${kept.join(', ')}`);
    assert.match(ended.stdout, new RegExp(`^The copy of the example stays in ${path.join(tmp, kept[0]!)}; remove it when done\\.$`, 'm'));
    const commands = auditCommands(ended.stdout);
    assert.deepEqual(
      commands.map((c) => c.split(' audit ')[0]),
      [spelledSymbi, spelledSymbi],
      `audit list and audit inspect, spelled for where the demo started\n${shown(ended)}`,
    );
    assert.ok(
      commands.every((c) => c.includes(path.join(tmp, kept[0]!))),
      'the commands point at the kept copy',
    );
    assertRunAsPrinted(commands, startDir, tmp);
  });

  it('npm run demo -- --keep from a subfolder of the clone prints commands that work from there', { timeout: 120_000 }, async () => {
    const tmp = ownTmp();
    const from = path.join(repoRoot, 'docs');
    const ended = await run(npm, ['run', '--silent', 'demo', '--', '--keep'], from, tmp);
    assert.equal(ended.code, 0, shown(ended));
    assert.equal(demoFolders(tmp).length, 1);
    const commands = auditCommands(ended.stdout);
    assert.equal(commands.length, 2, shown(ended));
    // bin/symbi.js is not below docs/, so it is named by its absolute path.
    for (const c of commands) assert.ok(c.startsWith(`node ${path.join(repoRoot, 'bin', 'symbi.js')} audit `), c);
    assertRunAsPrinted(commands, from, tmp);
  });

  for (const keep of [false, true]) {
    it(`Ctrl-C mid-demo stops the server and ${keep ? 'keeps the copy with --keep' : 'removes the copy'}, exit 130`, { timeout: 120_000 }, async () => {
      const tmp = ownTmp();
      const child = spawn(process.execPath, [symbiBin, 'demo', ...(keep ? ['--keep'] : [])], {
        cwd: startDir,
        env: env(tmp),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
      await new Promise<void>((resolve) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          // Mid-walk-through: the server is up and the first step has run.
          if (stdout.includes('2. invoke_agent')) resolve();
        });
        void ended.then(() => resolve());
      });
      assert.ok(child.kill('SIGINT'), 'the demo was still running');
      const code = await ended;
      const both = `--- stdout ---\n${stdout.slice(-3000)}\n--- stderr ---\n${stderr.slice(-2000)}`;
      assert.equal(code, 130, both);
      const folders = demoFolders(tmp);
      if (keep) {
        assert.equal(folders.length, 1, both);
        assert.match(
          stdout,
          new RegExp(`^Interrupted \\(SIGINT\\): the server was stopped and the copy of the example stays in ${path.join(tmp, folders[0]!)}\\.$`, 'm'),
          both,
        );
      } else {
        assert.deepEqual(folders, [], both);
        assert.match(stdout, /^Interrupted \(SIGINT\): the server was stopped and the copy of the example was removed\.$/m, both);
      }
      assert.doesNotMatch(stdout, /What to run next/, 'the walk-through printed nothing after the interrupt');
    });
  }

  it('npm run demo removes its copy and names `npm run demo -- --keep`', { timeout: 120_000 }, async () => {
    const tmp = ownTmp();
    const ended = await run(npm, ['run', '--silent', 'demo'], repoRoot, tmp);
    assert.equal(ended.code, 0, shown(ended));
    assert.match(ended.stdout, /^The copy of the example was removed; `npm run demo -- --keep` keeps it, for the symbi audit commands\.$/m);
    assert.deepEqual(demoFolders(tmp), []);
  });

  for (const [route, command, args, prefix] of [
    ['symbi demo', process.execPath, [symbiBin, 'demo', '--kep'], 'symbi demo'],
    ['the npm route', process.execPath, [path.join(repoRoot, 'scripts', 'demo.mjs'), '--kep'], 'demo'],
  ] as const) {
    it(`${route} with an unknown option: one usage line naming --keep, exit 2, nothing copied`, async () => {
      const tmp = ownTmp();
      const ended = await run(command, [...args], repoRoot, tmp);
      assert.equal(ended.code, 2, shown(ended));
      assert.equal(ended.stdout, '');
      assert.equal(
        ended.stderr,
        `${prefix}: unknown option "--kep"; the options are --keep (keep the copy of the example), or --endpoint [--port N] (only the local model endpoint, for your MCP client)\n`,
      );
      assert.deepEqual(demoFolders(tmp), []);
    });
  }
});

// ---- a machine the demo cannot run on ------------------------------------------------------------

function rootSkip(tools: string[]): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux namespaces and mounts';
  if (process.getuid?.() !== 0) return 'needs root for network namespaces and mounts (CI runs as root)';
  const missing = tools.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  if (missing.length > 0) return `needs ${missing.join(', ')}`;
  return undefined;
}

const netnsSkip = rootSkip(['unshare', 'ip', 'sysctl']) ?? (spawnSync('unshare', ['-n', 'true']).status === 0 ? undefined : 'unshare -n is not possible here');
const mountSkip = rootSkip(['mount', 'umount']);

/** One line on stderr, nothing on stdout, exit 1, no symbi-demo-* folder left in `tmp`. */
function assertSetupRefusal(ended: Ended, tmp: string, line: RegExp): void {
  assert.equal(ended.code, 1, shown(ended));
  assert.equal(ended.stdout, '', 'no report for a demo that could not start');
  assert.match(ended.stderr, line, shown(ended));
  assert.equal(ended.stderr.split('\n').length, 2, `one line on stderr\n${ended.stderr}`);
  assert.deepEqual(demoFolders(tmp), [], `no copy left in ${tmp}`);
}

describe('a machine the demo cannot run on: one line, exit 1, no copy left', () => {
  const ownTmp = suiteScratch('symbi-demo-tmp-');

  it('the loopback interface is down (a fresh network namespace), named at once', { skip: netnsSkip, timeout: 60_000 }, async () => {
    const tmp = ownTmp();
    // A new network namespace's lo starts down: listening on 127.0.0.1 works, connecting fails.
    const ended = await run('unshare', ['-n', process.execPath, symbiBin, 'demo'], startDir, tmp);
    assertSetupRefusal(
      ended,
      tmp,
      /^symbi demo: the loopback interface is down \(connecting to the local model endpoint at 127\.0\.0\.1:\d+ failed with ENETUNREACH\); bring it up with `ip link set lo up`, then run the demo again\n$/,
    );
    // Before, every step waited out its own failure (16 s and three failed steps).
    assert.ok(ended.ms < 10_000, `it ends promptly (${ended.ms} ms)`);
  });

  it('no local port can be bound (every ephemeral port reserved in the namespace)', { skip: netnsSkip, timeout: 60_000 }, async () => {
    const tmp = ownTmp();
    const setup =
      'ip link set lo up && sysctl -qw net.ipv4.ip_local_port_range="40000 40001" && sysctl -qw net.ipv4.ip_local_reserved_ports=40000-40001 && exec "$@"';
    const ended = await run('unshare', ['-n', 'sh', '-c', setup, 'sh', process.execPath, symbiBin, 'demo'], startDir, tmp);
    assertSetupRefusal(
      ended,
      tmp,
      /^symbi demo: the local model endpoint could not listen on 127\.0\.0\.1 \(EADDRINUSE\); no local port is free; .*, then run the demo again\n$/,
    );
  });

  for (const [kind, options, line] of [
    [
      'full (the copy is cut short)',
      'size=64k,nr_inodes=4',
      /^symbi demo: cannot make a copy of the example in the temporary folder \S+ \(ENOSPC\); free some space there or set TMPDIR to another folder\n$/,
    ],
    ['read-only', 'ro', /^symbi demo: cannot make a copy of the example in the temporary folder \S+ \(EROFS\); set TMPDIR to a folder you can write to\n$/],
  ] as const) {
    it(`the temporary folder is ${kind}`, { skip: mountSkip, timeout: 60_000 }, async () => {
      const tmp = ownTmp();
      const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'symbi-demo-test', tmp], { encoding: 'utf8' });
      assert.equal(mounted.status, 0, `mount a tmpfs (${options}) on ${tmp}: ${mounted.stderr}`);
      try {
        const ended = await run(process.execPath, [symbiBin, 'demo'], startDir, tmp);
        assertSetupRefusal(ended, tmp, line);
      } finally {
        spawnSync('umount', [tmp]);
      }
    });
  }
});

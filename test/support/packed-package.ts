import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './server-entry.js';

// The package as a user gets it: `npm pack` of this repository, installed with
// `npm install <tarball>` into a temporary folder that has never seen the
// repository. Packing and installing take several seconds (the install fetches
// the runtime dependencies, from npm's cache when it has them), so it happens
// once per test process and the folder is removed when the process exits.
//
// The pack runs with --ignore-scripts: `prepack` would rebuild dist/ in place
// while other test files run the server from it. `npm test` builds first, so
// the tarball holds the same dist/ the rest of the suite tests;
// package-install.test.ts checks that `prepack` is the build step.

const run = promisify(execFile);

export interface InstalledPackage {
  /** The temporary project folder holding node_modules/symbi-mcp. */
  dir: string;
  tarball: string;
  /** node_modules/.bin/symbi and node_modules/.bin/symbi-mcp. */
  symbiBin: string;
  symbiMcpBin: string;
  /** Every path in the tarball, as `tar -tzf` lists it (each under package/). */
  tarballEntries: string[];
}

/** What npm and the installed bins need, without an enclosing `npm test`'s npm_* variables or any provider key. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? os.tmpdir(),
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_prefer_offline: 'true',
  };
  if (process.env.npm_config_cache !== undefined) env.npm_config_cache = process.env.npm_config_cache;
  return env;
}

let installing: Promise<InstalledPackage> | undefined;

export function installedPackage(): Promise<InstalledPackage> {
  installing ??= packAndInstall();
  return installing;
}

async function packAndInstall(): Promise<InstalledPackage> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-packed-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const env = cleanEnv();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

  const packed = await run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: repoRoot, env, maxBuffer: 16 * 1024 * 1024 });
  const filename = (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename;
  const tarball = path.join(dir, filename);

  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'symbi-install-check', private: true }) + '\n');
  await run(npm, ['install', tarball, '--no-audit', '--no-fund'], { cwd: dir, env, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 });

  const listed = await run('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
  return {
    dir,
    tarball,
    symbiBin: path.join(dir, 'node_modules', '.bin', 'symbi'),
    symbiMcpBin: path.join(dir, 'node_modules', '.bin', 'symbi-mcp'),
    tarballEntries: listed.stdout.split('\n').filter((line) => line.length > 0),
  };
}

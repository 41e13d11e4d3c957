import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { repoRoot } from './server-entry.js';

// The package as a user gets it: `npm pack` of this repository, installed with
// `npm install <tarball>` into a folder that has never seen the repository.
//
// Packing and installing take several seconds, and several test files need the
// package (e2e/package-install, e2e/readme-snippets; .ci/run's installed-package run),
// each in its own process. So the installed package is kept in a cache folder
// under the temporary directory, named after the tarball's own hash, which
// `npm pack --dry-run` reports without writing anything: one tarball and one
// install per source state, however many files (or runs) ask. A new folder is
// made under a private name and renamed into place whole, so files asking at
// the same moment never see half of one; the one that loses the rename uses
// the winner's. The tests only read the folder (each writes in scratch
// folders of its own). Folders not used for an hour are removed when a new one
// is made.
//
// The pack runs with --ignore-scripts: `prepack` would rebuild dist/ in place
// while other test files run the server from it. The suites run after a build
// (`npm test`, then `npm run test:e2e`), so the tarball holds the same dist/
// the rest of the suite tests;
// e2e/package-install.test.ts checks that `prepack` is the build step.
//
// Run directly (`node --import tsx test/support/packed-package.ts`), it prints
// the folder, for .ci/run.

const run = promisify(execFile);
const CACHE_PREFIX = 'symbi-packed-';
const UNUSED_MS = 60 * 60 * 1000;
const LAST_USED = '.last-used';
const READY = '.ready.json';

export interface InstalledPackage {
  /** The folder holding the tarball and node_modules/symbi-mcp (shared: read it, never write in it). */
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
  installing ??= cachedInstall();
  return installing;
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface PackedFile {
  filename: string;
  integrity: string;
}

/** `npm pack` with --json: the tarball's name and hash (with --dry-run, of the tarball it would write). */
async function pack(extra: string[]): Promise<PackedFile> {
  const packed = await run(npm, ['pack', '--ignore-scripts', '--json', ...extra], { cwd: repoRoot, env: cleanEnv(), maxBuffer: 16 * 1024 * 1024 });
  return (JSON.parse(packed.stdout) as PackedFile[])[0]!;
}

async function cachedInstall(): Promise<InstalledPackage> {
  // npm writes its tarballs with fixed times and modes, so the hash is one of the packed content.
  const planned = await pack(['--dry-run']);
  const key = crypto.createHash('sha256').update(planned.integrity).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), `${CACHE_PREFIX}${key}`);
  if (!fs.existsSync(path.join(dir, READY))) await installInto(dir, planned);
  const now = new Date();
  fs.utimesSync(path.join(dir, LAST_USED), now, now);
  const ready = JSON.parse(fs.readFileSync(path.join(dir, READY), 'utf8')) as { filename: string; tarballEntries: string[] };
  return {
    dir,
    tarball: path.join(dir, ready.filename),
    symbiBin: path.join(dir, 'node_modules', '.bin', 'symbi'),
    symbiMcpBin: path.join(dir, 'node_modules', '.bin', 'symbi-mcp'),
    tarballEntries: ready.tarballEntries,
  };
}

/** Packs and installs into a private folder, then renames it to `dir`; a folder already there (another file won) is kept. */
async function installInto(dir: string, planned: PackedFile): Promise<void> {
  removeUnused();
  const building = fs.mkdtempSync(`${dir}.building-`);
  try {
    const packed = await pack(['--pack-destination', building]);
    if (packed.integrity !== planned.integrity)
      throw new Error(`npm pack wrote ${packed.integrity}, its dry run said ${planned.integrity}: did the tree change meanwhile?`);
    const tarball = path.join(building, packed.filename);
    fs.writeFileSync(path.join(building, 'package.json'), JSON.stringify({ name: 'symbi-install-check', private: true }) + '\n');
    await run(npm, ['install', tarball, '--no-audit', '--no-fund'], { cwd: building, env: cleanEnv(), timeout: 240_000, maxBuffer: 16 * 1024 * 1024 });
    const listed = await run('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
    const tarballEntries = listed.stdout.split('\n').filter((line) => line.length > 0);
    fs.writeFileSync(path.join(building, LAST_USED), '');
    fs.writeFileSync(path.join(building, READY), JSON.stringify({ filename: packed.filename, tarballEntries }) + '\n');
    // Readable by the other users the ownership tests start the server as (.ci/run's installed-package run).
    fs.chmodSync(building, 0o755);
    try {
      fs.renameSync(building, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOTEMPTY' && code !== 'EEXIST') || !fs.existsSync(path.join(dir, READY))) throw err;
    }
  } finally {
    fs.rmSync(building, { recursive: true, force: true });
  }
}

/** Removes the cache folders (and abandoned builds) of other source states not used for an hour. */
function removeUnused(): void {
  const tmp = os.tmpdir();
  for (const name of fs.readdirSync(tmp)) {
    if (!name.startsWith(CACHE_PREFIX)) continue;
    const folder = path.join(tmp, name);
    let used: number;
    try {
      used = fs.statSync(fs.existsSync(path.join(folder, LAST_USED)) ? path.join(folder, LAST_USED) : folder).mtimeMs;
    } catch {
      continue;
    }
    if (Date.now() - used > UNUSED_MS) fs.rmSync(folder, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${(await installedPackage()).dir}\n`);
}

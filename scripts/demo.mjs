#!/usr/bin/env node
// `npm run demo`: the first thing a new user runs. This file uses Node built-ins only, so it works on a
// fresh clone: it installs the dependencies and builds the package when either is missing, then hands over to
// src/demo/demo-main.ts (TypeScript, run through tsx), which drives a real `symbi mcp` with the MCP SDK client.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function step(message) {
  process.stdout.write(`demo: ${message}\n`);
}

function run(command, args, what) {
  // npm's own chatter goes to stderr so the demo transcript on stdout stays readable.
  const result = spawnSync(command, args, { cwd: repoRoot, stdio: ['ignore', process.stderr, process.stderr] });
  if (result.error !== undefined || result.status !== 0) {
    const why = result.error !== undefined ? result.error.message : `exit status ${result.status ?? result.signal}`;
    process.stderr.write(`demo: ${what} failed (${why}); fix the problem above and run npm run demo again\n`);
    process.exit(1);
  }
}

const major = Number(process.versions.node.split('.')[0]);
if (!(major >= 20)) {
  process.stderr.write(`demo: Node.js ${process.versions.node} is too old (allowed: 20 or newer)\n`);
  process.exit(1);
}

const installed = existsSync(path.join(repoRoot, 'node_modules', 'tsx')) && existsSync(path.join(repoRoot, 'node_modules', '@modelcontextprotocol', 'sdk'));
if (!installed) {
  const hasLock = existsSync(path.join(repoRoot, 'package-lock.json'));
  step(hasLock ? 'installing dependencies (npm ci)...' : 'installing dependencies (npm install)...');
  run(npm, hasLock ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund'], 'installing dependencies');
}

if (!existsSync(path.join(repoRoot, 'bundle', 'supervisor', 'cli.js'))) {
  step('building the package (npm run build)...');
  run(npm, ['run', 'build', '--silent'], 'building');
}

// The demo spells `node bin/symbi.js` relative to where it was started: npm says where in INIT_CWD.
const demo = spawnSync(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src', 'demo', 'demo-main.ts'), ...process.argv.slice(2)], {
  cwd: repoRoot,
  env: { ...process.env, INIT_CWD: process.env.INIT_CWD ?? process.cwd() },
  stdio: 'inherit',
});
if (demo.error !== undefined) {
  process.stderr.write(`demo: could not start the demo (${demo.error.message})\n`);
  process.exit(1);
}
process.exit(demo.status ?? 1);

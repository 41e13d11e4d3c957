// Startup cost of proving the confinement route in a child process (issue 32):
// the time from spawning `symbi mcp` to its answer to `initialize`, for the
// code before the change (--base <its bin/symbi.js>) and this checkout, taken
// in turns so that load on the machine falls on both alike. This checkout runs
// twice: with its proof remembered in a private cache directory (every start
// after the first) and with an empty one (the first start on a system, which
// pays for the child process).
//
//   node --import tsx scripts/bench/bench-startup-proof.ts --base /path/to/old/bin/symbi.js [--runs 15]
//
// With --base-src <old src/shared/confinement/index.ts> it times, in this one
// process, only what changed: pinning the project (the route choice with its
// proof remembered, the probes, the reserved directories) old against new,
// wall and CPU time, which a loaded machine disturbs far less than whole starts.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { pathToFileURL } from 'node:url';
import { symbiBin } from '../../test/support/server-entry.js';

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}

const base = option('--base');
if (base === undefined) {
  process.stderr.write('bench-startup-proof: give --base <bin/symbi.js of the code to compare with>\n');
  process.exit(2);
}
const RUNS = Number(option('--runs') ?? '15');

async function startupMs(bin: string, project: string, env: Record<string, string>): Promise<number> {
  const started = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp', '--project', project], env, stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '0.0.0' });
  await client.connect(transport);
  const ms = performance.now() - started;
  await client.close();
  return ms;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

type Pin = (dir: string, env?: NodeJS.ProcessEnv) => { fd: number };

/** Median wall and CPU milliseconds of pinning `project` with `pin`, in turns with the other. */
async function pinTimes(baseSrc: string, project: string, env: NodeJS.ProcessEnv, runs: number): Promise<void> {
  const old = (await import(pathToFileURL(baseSrc).href)) as { pinProject: Pin };
  const ours = (await import('../../src/shared/confinement/index.js')) as { pinProject: Pin };
  const time = (pin: Pin): [number, number] => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const pinned = pin(project, env);
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu);
    fs.closeSync(pinned.fd);
    return [wall, (used.user + used.system) / 1000];
  };
  time(ours.pinProject); // remembers the proof
  time(old.pinProject);
  const rows = { old: { wall: [] as number[], cpu: [] as number[] }, ours: { wall: [] as number[], cpu: [] as number[] } };
  for (let i = 0; i < runs; i++) {
    for (const [name, pin] of [
      ['old', old.pinProject],
      ['ours', ours.pinProject],
    ] as const) {
      const [wall, cpu] = time(pin);
      rows[name].wall.push(wall);
      rows[name].cpu.push(cpu);
    }
  }
  process.stdout.write(`pinning the project (route choice, probes, reserved directories), median of ${runs} (load average ${os.loadavg()[0]!.toFixed(1)}):\n`);
  process.stdout.write(`  before                           ${median(rows.old.wall).toFixed(2)} ms wall, ${median(rows.old.cpu).toFixed(2)} ms CPU\n`);
  process.stdout.write(`  proof remembered                 ${median(rows.ours.wall).toFixed(2)} ms wall, ${median(rows.ours.cpu).toFixed(2)} ms CPU\n`);
}

async function main(): Promise<void> {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-proof-'));
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-proof-cache-'));
  try {
    fs.mkdirSync(path.join(project, 'agents'));
    fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n}\n');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), XDG_CACHE_HOME: cache };
    const baseSrc = option('--base-src');
    if (baseSrc !== undefined) {
      // The storage exists, as on every start after the first.
      fs.mkdirSync(path.join(project, '.symbiont'), { mode: 0o700 });
      // --scratch DIR: the self-test's temporary directory on another file system, so the project is probed too.
      const scratch = option('--scratch');
      if (scratch !== undefined) process.env.TMPDIR = scratch;
      await pinTimes(baseSrc, project, env, Number(option('--pin-runs') ?? '200'));
      if (option('--only-pin') !== undefined) return;
    }
    // One start each first: the storage exists and the proof is remembered before timing.
    await startupMs(symbiBin, project, env);
    await startupMs(base!, project, env);
    const before: number[] = [];
    const remembered: number[] = [];
    const firstStart: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      before.push(await startupMs(base!, project, env));
      remembered.push(await startupMs(symbiBin, project, env));
      const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-proof-empty-'));
      firstStart.push(await startupMs(symbiBin, project, { ...env, XDG_CACHE_HOME: empty }));
      fs.rmSync(empty, { recursive: true, force: true });
    }
    const rows: Array<[string, number]> = [
      ['before (no child proof)', median(before)],
      ['proof remembered', median(remembered)],
      ['first start (proof in a child)', median(firstStart)],
    ];
    process.stdout.write(`startup to the initialize answer, median of ${RUNS} (load average ${os.loadavg()[0]!.toFixed(1)}):\n`);
    for (const [what, ms] of rows) process.stdout.write(`  ${what.padEnd(32)} ${ms.toFixed(1)} ms\n`);
    process.stdout.write(`  remembered minus before          ${(median(remembered) - median(before)).toFixed(1)} ms\n`);
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
    fs.rmSync(cache, { recursive: true, force: true });
  }
}

await main();

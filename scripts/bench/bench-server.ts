import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// Benchmark for `symbi mcp` (run after `npm run build`):
//  1. get_agent_dsl round trips against @modelcontextprotocol/server-filesystem's
//     read_text_file on the same file (2,000 calls each, p50/p99);
//  2. time from spawn to the initialize answer with 1,000 agent files against a
//     bare SDK server with one tool (scripts/bench/bare-mcp-server.mjs).
// Targets: get_agent_dsl p50 / read_text_file p50 <= 1.0; startup <= 1.3x bare (issue 15).

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const symbiBin = path.join(repo, 'bin', 'symbi.js');
const filesystemServer = path.join(repo, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const bareServer = path.join(repo, 'scripts', 'bench', 'bare-mcp-server.mjs');
const CALLS = 2000;
const WARMUP = 200;
const STARTUP_RUNS = 9;

const AGENT_SOURCE = `metadata {\n  version = "1.0.0"\n  description = "Benchmark assistant"\n}\n\nagent assistant {\n  capabilities = ["answer"]\n}\n// ${'padding '.repeat(100)}\n`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function connect(command: string, args: string[], cwd?: string): Promise<{ client: Client; ms: number }> {
  const transport = new StdioClientTransport({ command, args, stderr: 'ignore', ...(cwd ? { cwd } : {}) });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const start = performance.now();
  await client.connect(transport);
  return { client, ms: performance.now() - start };
}

async function roundTrips(client: Client, name: string, args: Record<string, unknown>, expect: string): Promise<{ p50: number; p99: number }> {
  const check = async (): Promise<number> => {
    const start = performance.now();
    const result = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; isError?: boolean };
    const ms = performance.now() - start;
    if (result.isError || result.content[0]?.text !== expect) throw new Error(`${name} returned an unexpected result`);
    return ms;
  };
  for (let i = 0; i < WARMUP; i++) await check();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) times.push(await check());
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function startupMedian(command: string, args: string[]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < STARTUP_RUNS; i++) {
    const { client, ms } = await connect(command, args);
    times.push(ms);
    await client.close();
  }
  times.sort((a, b) => a - b);
  return percentile(times, 50);
}

const fmt = (n: number) => n.toFixed(3);

async function main(): Promise<void> {
  const small = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-'));
  const large = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-1000-'));
  try {
    fs.mkdirSync(path.join(small, 'agents'));
    fs.writeFileSync(path.join(small, 'agents', 'assistant.symbi'), AGENT_SOURCE);
    fs.mkdirSync(path.join(large, 'agents'));
    for (let i = 0; i < 1000; i++) {
      fs.writeFileSync(path.join(large, 'agents', `agent${String(i).padStart(4, '0')}.symbi`), AGENT_SOURCE.replace('assistant', `agent${i}`));
    }

    const symbi = await connect(process.execPath, [symbiBin, 'mcp', '--project', small]);
    const ours = await roundTrips(symbi.client, 'get_agent_dsl', { agent: 'assistant' }, AGENT_SOURCE);
    await symbi.client.close();

    const fsServer = await connect(process.execPath, [filesystemServer, small]);
    const theirs = await roundTrips(fsServer.client, 'read_text_file', { path: path.join(small, 'agents', 'assistant.symbi') }, AGENT_SOURCE);
    await fsServer.client.close();

    const startupOurs = await startupMedian(process.execPath, [symbiBin, 'mcp', '--project', large]);
    const startupBare = await startupMedian(process.execPath, [bareServer]);

    const ratio = ours.p50 / theirs.p50;
    const startupRatio = startupOurs / startupBare;
    const rows = [
      ['measurement', 'value', 'target'],
      ['get_agent_dsl p50 / p99 (ms)', `${fmt(ours.p50)} / ${fmt(ours.p99)}`, ''],
      ['server-filesystem read_text_file p50 / p99 (ms)', `${fmt(theirs.p50)} / ${fmt(theirs.p99)}`, ''],
      ['p50 ratio (ours / filesystem)', fmt(ratio), '<= 1.0'],
      ['startup to initialize, 1,000 agents (ms, median of 9)', fmt(startupOurs), ''],
      ['startup to initialize, bare SDK server (ms, median of 9)', fmt(startupBare), ''],
      ['startup ratio', fmt(startupRatio), '<= 1.3'],
    ];
    const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
    for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c]!)).join('  '));
    console.log(
      `BENCH_JSON ${JSON.stringify({
        get_agent_dsl_p50_ms: ours.p50,
        get_agent_dsl_p99_ms: ours.p99,
        read_text_file_p50_ms: theirs.p50,
        read_text_file_p99_ms: theirs.p99,
        p50_ratio: ratio,
        startup_1000_agents_ms: startupOurs,
        startup_bare_ms: startupBare,
        startup_ratio: startupRatio,
        targets_met: ratio <= 1.0 && startupRatio <= 1.3,
      })}`,
    );
  } finally {
    fs.rmSync(small, { recursive: true, force: true });
    fs.rmSync(large, { recursive: true, force: true });
  }
}

await main();

// invoke_agent benchmark: governed round trips against a bare SDK tool making the
// same HTTP call, throughput at 64 concurrent calls, and 256 concurrent calls
// against a 1-second endpoint. Usage: node --import tsx scripts/bench-invoke.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSyntheticEndpoint } from '../test/support/synthetic-endpoint.js';

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const endpoint = await startSyntheticEndpoint();
const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), OPENAI_BASE_URL: endpoint.url, OPENAI_API_KEY: 'bench', CHAT_MODEL: 'synthetic' };

const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-invoke-'));
fs.mkdirSync(path.join(project, 'agents'));
fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n  capabilities = ["answer"]\n}\n');

async function connect(args: string[]): Promise<{ client: Client; pid: number }> {
  const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore' });
  const client = new Client({ name: 'bench-invoke', version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid ?? 0 };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function roundTrips(call: () => Promise<unknown>, n: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 50; i++) await call(); // warm up
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

const governed = await connect([path.join(repoRoot, 'bin', 'symbi.js'), 'mcp', '--project', project]);
const bare = await connect(['--import', 'tsx', path.join(repoRoot, 'scripts', 'bare-inference-server.ts')]);

const invoke = (prompt: string) => async () => {
  const r = await governed.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt } }, undefined, { timeout: 120_000 });
  if (r.isError) throw new Error(JSON.stringify(r.content));
};
const governedTrips = await roundTrips(invoke('hello'), 1000);
const bareTrips = await roundTrips(() => bare.client.callTool({ name: 'infer', arguments: { prompt: 'hello' } }), 1000);

// Throughput at 64 concurrent calls.
const throughputCalls = 2000;
let issued = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (issued < throughputCalls) {
      issued += 1;
      await invoke('hello')();
    }
  }),
);
const perSecond = throughputCalls / ((performance.now() - t0) / 1000);

// 256 concurrent calls against a 1-second endpoint.
const t1 = performance.now();
await Promise.all(Array.from({ length: 256 }, () => invoke('slow [[delay:1000]]')()));
const slowWall = (performance.now() - t1) / 1000;
const rss = peakRssMb(governed.pid);

await governed.client.close();
await bare.client.close();
await endpoint.close();
fs.rmSync(project, { recursive: true, force: true });

const ratio = governedTrips.p50 / bareTrips.p50;
const result = {
  governed_p50_ms: Number(governedTrips.p50.toFixed(2)),
  governed_p99_ms: Number(governedTrips.p99.toFixed(2)),
  bare_p50_ms: Number(bareTrips.p50.toFixed(2)),
  bare_p99_ms: Number(bareTrips.p99.toFixed(2)),
  p50_ratio: Number(ratio.toFixed(2)),
  throughput_64_per_s: Math.round(perSecond),
  slow_256_wall_s: Number(slowWall.toFixed(2)),
  peak_rss_mb: rss,
};
process.stdout.write(
  [
    'invoke_agent benchmark',
    `  round trip p50 ${result.governed_p50_ms} ms / p99 ${result.governed_p99_ms} ms; bare SDK tool p50 ${result.bare_p50_ms} ms / p99 ${result.bare_p99_ms} ms; ratio ${result.p50_ratio} (target <= 4)`,
    `  throughput at 64 concurrent: ${result.throughput_64_per_s} invocations/s (target >= 300)`,
    `  256 concurrent against a 1 s endpoint: ${result.slow_256_wall_s} s wall (target <= 1.5 s), peak RSS ${rss} MB (target < 300 MB)`,
    `BENCH_JSON ${JSON.stringify(result)}`,
    '',
  ].join('\n'),
);

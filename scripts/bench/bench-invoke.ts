// invoke_agent benchmark, on a copy of examples/quickstart (its sample Cedar policy judges every
// answer) against the synthetic endpoint:
// - round trips of invoke_agent and of a bare SDK tool making the same HTTP call
//   (scripts/bench/bare-inference-server.ts), interleaved call by call so noise falls on both alike;
// - the first invoke_agent of a session, sent 1 s and 3 s after `initialize`, against the median of the
//   ten calls after it (fresh servers, the median of FIRST_CALL_SESSIONS sessions);
// - throughput at 64 concurrent calls, and 256 concurrent calls against a 1-second endpoint.
//
// Usage: node --import tsx scripts/bench/bench-invoke.ts [--calls N] [--root DIR]
//   --root runs the server of another checkout (built), for a side-by-side comparison.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const { values: options } = parseArgs({ options: { calls: { type: 'string', default: '1000' }, root: { type: 'string' } } });
const CALLS = Number(options.calls);
const FIRST_CALL_SESSIONS = 3;
const THROUGHPUT_CALLS = 2000;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const serverRoot = path.resolve(options.root ?? repoRoot);
const endpoint = await startSyntheticEndpoint();
const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), OPENAI_BASE_URL: endpoint.url, OPENAI_API_KEY: 'bench', CHAT_MODEL: 'synthetic' };

const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-invoke-'));
fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), project, { recursive: true });
const governedArgs = [path.join(serverRoot, 'bin', 'symbi.js'), 'mcp', '--project', project];

async function connect(args: string[]): Promise<{ client: Client; pid: number }> {
  const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore' });
  const client = new Client({ name: 'bench-invoke', version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid ?? 0 };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function timed(call: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await call();
  return performance.now() - t;
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

const invokeOn = (client: Client, prompt: string) => async () => {
  const r = await client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt } }, undefined, { timeout: 120_000 });
  if (r.isError) throw new Error(JSON.stringify(r.content));
};

// The first call of a session, on fresh servers, before the main server exists: sent `waitMs`
// after initialize, against the median of the ten calls after it.
async function firstCallExtras(waitMs: number): Promise<number[]> {
  const extras: number[] = [];
  for (let session = 0; session < FIRST_CALL_SESSIONS; session += 1) {
    const fresh = await connect(governedArgs);
    await sleep(waitMs);
    const call = invokeOn(fresh.client, 'hello');
    const first = await timed(call);
    const next: number[] = [];
    for (let i = 0; i < 10; i += 1) next.push(await timed(call));
    next.sort((a, b) => a - b);
    extras.push(first - (next[4]! + next[5]!) / 2);
    await fresh.client.close();
  }
  return extras.sort((a, b) => a - b);
}
const firstCallAfter1s = await firstCallExtras(1000);
const firstCallAfter3s = await firstCallExtras(3000);

const governed = await connect(governedArgs);
const bare = await connect(['--import', 'tsx', path.join(repoRoot, 'scripts', 'bench', 'bare-inference-server.ts')]);
const invoke = invokeOn(governed.client, 'hello');
const infer = () => bare.client.callTool({ name: 'infer', arguments: { prompt: 'hello' } });

for (let i = 0; i < 50; i += 1) {
  await invoke();
  await infer();
}
const governedTimes: number[] = [];
const bareTimes: number[] = [];
for (let i = 0; i < CALLS; i += 1) {
  governedTimes.push(await timed(invoke));
  bareTimes.push(await timed(infer));
}
governedTimes.sort((a, b) => a - b);
bareTimes.sort((a, b) => a - b);

// Throughput at 64 concurrent calls.
let issued = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (issued < THROUGHPUT_CALLS) {
      issued += 1;
      await invoke();
    }
  }),
);
const perSecond = THROUGHPUT_CALLS / ((performance.now() - t0) / 1000);

// 256 concurrent calls against a 1-second endpoint.
const t1 = performance.now();
await Promise.all(Array.from({ length: 256 }, () => invokeOn(governed.client, 'slow [[delay:1000]]')()));
const slowWall = (performance.now() - t1) / 1000;
const rss = peakRssMb(governed.pid);

await governed.client.close();
await bare.client.close();
await endpoint.close();
fs.rmSync(project, { recursive: true, force: true });

const round2 = (n: number) => Number(n.toFixed(2));
const result = {
  governed_p50_ms: round2(percentile(governedTimes, 50)),
  governed_p99_ms: round2(percentile(governedTimes, 99)),
  bare_p50_ms: round2(percentile(bareTimes, 50)),
  bare_p99_ms: round2(percentile(bareTimes, 99)),
  p50_ratio: round2(percentile(governedTimes, 50) / percentile(bareTimes, 50)),
  first_call_extra_ms: Math.round(firstCallAfter1s[Math.floor(firstCallAfter1s.length / 2)]!),
  first_call_extra_range_ms: firstCallAfter1s.map((n) => Math.round(n)),
  first_call_3s_extra_ms: Math.round(firstCallAfter3s[Math.floor(firstCallAfter3s.length / 2)]!),
  first_call_3s_extra_range_ms: firstCallAfter3s.map((n) => Math.round(n)),
  throughput_64_per_s: Math.round(perSecond),
  slow_256_wall_s: round2(slowWall),
  peak_rss_mb: rss,
};
process.stdout.write(
  [
    'invoke_agent benchmark (quickstart policy)',
    `  round trip p50 ${result.governed_p50_ms} ms / p99 ${result.governed_p99_ms} ms; bare SDK tool p50 ${result.bare_p50_ms} ms / p99 ${result.bare_p99_ms} ms; ratio ${result.p50_ratio}`,
    `  first call 1 s after initialize, minus the median of the next 10: ${result.first_call_extra_ms} ms (sessions: ${result.first_call_extra_range_ms.join(', ')} ms)`,
    `  first call 3 s after initialize, minus the median of the next 10: ${result.first_call_3s_extra_ms} ms (sessions: ${result.first_call_3s_extra_range_ms.join(', ')} ms)`,
    `  throughput at 64 concurrent: ${result.throughput_64_per_s} invocations/s`,
    `  256 concurrent against a 1 s endpoint: ${result.slow_256_wall_s} s wall, peak RSS ${rss} MB`,
    `BENCH_JSON ${JSON.stringify(result)}`,
    '',
  ].join('\n'),
);

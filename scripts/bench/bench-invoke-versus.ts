// Side by side: the invoke_agent round trip of this checkout (A) against another built checkout (B),
// both interleaved call by call with the bare SDK tool of scripts/bench/bare-inference-server.ts, so the
// machine's state (which moves the bench-invoke ratio by about 0.2 here between runs) falls on both.
// The order alternates (A, bare, B, bare, then B, bare, A, bare), so each governed call follows a bare one.
// docs/benchmarks.md reports the A/B ratios of the changes measured this way.
//
// Usage: node --import tsx scripts/bench/bench-invoke-versus.ts --versus DIR [--calls N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const { values: options } = parseArgs({ options: { calls: { type: 'string', default: '2500' }, versus: { type: 'string' } } });
if (options.versus === undefined) throw new Error('--versus DIR: the built checkout to compare with');
const CALLS = Number(options.calls);
const WARM_UP = 50;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const endpoint = await startSyntheticEndpoint();
const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), OPENAI_BASE_URL: endpoint.url, OPENAI_API_KEY: 'bench', CHAT_MODEL: 'synthetic' };
const projects: string[] = [];
const clients: Client[] = [];

async function connect(args: string[]): Promise<Client> {
  const client = new Client({ name: 'bench-invoke-versus', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore' }));
  clients.push(client);
  return client;
}

async function governed(root: string): Promise<() => Promise<unknown>> {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-versus-'));
  projects.push(project);
  fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), project, { recursive: true });
  const client = await connect([path.join(root, 'bin', 'symbi.js'), 'mcp', '--project', project]);
  return async () => {
    const r = await client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
    if (r.isError) throw new Error(JSON.stringify(r.content));
  };
}

const calls = { A: await governed(repoRoot), B: await governed(path.resolve(options.versus)) };
const bareClient = await connect(['--import', 'tsx', path.join(repoRoot, 'scripts', 'bench', 'bare-inference-server.ts')]);
const bare = () => bareClient.callTool({ name: 'infer', arguments: { prompt: 'hello' } });
const times = { A: [] as number[], B: [] as number[], bare: [] as number[] };

async function timed(name: keyof typeof times, call: () => Promise<unknown>, keep: boolean): Promise<void> {
  const t = performance.now();
  await call();
  if (keep) times[name].push(performance.now() - t);
}

for (let i = 0; i < CALLS + WARM_UP; i += 1) {
  const keep = i >= WARM_UP;
  const [first, second] = i % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const);
  await timed(first, calls[first], keep);
  await timed('bare', bare, keep);
  await timed(second, calls[second], keep);
  await timed('bare', bare, keep);
}

for (const client of clients) await client.close();
await endpoint.close();
for (const project of projects) fs.rmSync(project, { recursive: true, force: true });

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const [a, b, r] = [median(times.A), median(times.B), median(times.bare)];
const result = { calls: CALLS, a_p50_ms: a, b_p50_ms: b, bare_p50_ms: r, a_over_b: a / b };
process.stdout.write(
  `A (this checkout) p50 ${a.toFixed(2)} ms, B (${options.versus}) ${b.toFixed(2)} ms, bare ${r.toFixed(2)} ms; ` +
    `ratios to bare ${(a / r).toFixed(2)} and ${(b / r).toFixed(2)}; A/B ${(a / b).toFixed(3)}\nBENCH_JSON ${JSON.stringify(result)}\n`,
);

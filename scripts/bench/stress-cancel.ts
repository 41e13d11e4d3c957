// Stress the cancellation guarantee: N invocations at concurrency C against the
// synthetic endpoint, a random half cancelled at random moments, then every
// journal inspected. Usage: node --import tsx scripts/bench/stress-cancel.ts [--n 500] [--c 64]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { signingKeyFromSeed } from '../../src/shared/signing/signing-key.js';
import { startSyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '500' }, c: { type: 'string', default: '64' }, warmup: { type: 'string', default: '64' } } });
const total = Number(values.n);
const concurrency = Number(values.c);
const warmup = Number(values.warmup);
if (!Number.isInteger(total) || total < 1 || !Number.isInteger(concurrency) || concurrency < 1 || !Number.isInteger(warmup) || warmup < 0) {
  process.stderr.write('usage: stress-cancel [--n N>=1] [--c C>=1] [--warmup W>=0]\n');
  process.exit(2);
}

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-stress-'));
fs.mkdirSync(path.join(project, 'agents'));
fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n  capabilities = ["answer"]\n}\n');

const endpoint = await startSyntheticEndpoint();
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [...(process.env.STRESS_NODE_ARGS ? process.env.STRESS_NODE_ARGS.split(' ') : []), path.join(repoRoot, 'bin', 'symbi.js'), 'mcp', '--project', project, '--log-format', 'json'],
  env: { ...(process.env.UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE } : {}), PATH: process.env.PATH ?? '', HOME: os.tmpdir(), OPENAI_BASE_URL: endpoint.url, OPENAI_API_KEY: 'stress', CHAT_MODEL: 'synthetic' },
  stderr: 'pipe',
});
let stderr = '';
transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
const client = new Client({ name: 'stress-cancel', version: '1' });
await client.connect(transport);
const serverPid = transport.pid ?? 0;

let peakRssKiB = 0;
const sampler = setInterval(() => {
  try {
    const status = fs.readFileSync(`/proc/${serverPid}/status`, 'utf8');
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
    if (hwm) peakRssKiB = Math.max(peakRssKiB, Number(hwm[1]));
  } catch {
    // the process may have exited
  }
}, 50);

// A long-lived server has its worker threads and Cedar loaded before the first
// cancel; the warm-up runs (never cancelled) make the measurement see that state.
// Their journals are inspected with the rest.
await Promise.all(
  Array.from({ length: warmup }, (_, i) =>
    client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `warm-up ${i}` } }, undefined, { timeout: 120_000 }),
  ),
);
const warmupStderrBytes = stderr.length;

const started = performance.now();
let next = 0;
let cancelledCount = 0;
async function lane(): Promise<void> {
  while (next < total) {
    const i = next++;
    const controller = new AbortController();
    const providerDelay = Math.floor(Math.random() * 200);
    const cancel = Math.random() < 0.5;
    if (cancel) {
      cancelledCount += 1;
      setTimeout(() => controller.abort('stress'), Math.floor(Math.random() * 250));
    }
    await client
      .callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `run ${i} [[delay:${providerDelay}]]` } }, undefined, {
        signal: controller.signal,
        timeout: 120_000,
      })
      .catch(() => undefined);
  }
}
await Promise.all(Array.from({ length: concurrency }, lane));

// Cancelled calls return to the client before their terminal records land; wait for the journals to settle.
const governed = path.join(project, '.symbiont', 'governed');
const journalFiles = (): string[] => (fs.existsSync(governed) ? fs.readdirSync(governed).filter((f) => f.endsWith('.jsonl')) : []);
const settleUntil = Date.now() + 15_000;
while (Date.now() < settleUntil) {
  const files = journalFiles();
  const open = files.filter((f) => !fs.readFileSync(path.join(governed, f), 'utf8').includes('"Terminated"'));
  if (files.length >= total + warmup && open.length === 0) break;
  await new Promise((r) => setTimeout(r, 50));
}
await new Promise((r) => setTimeout(r, 100));
const openConnections = endpoint.openConnections();
const wallSeconds = (performance.now() - started) / 1000;

const publicKey = signingKeyFromSeed(fs.readFileSync(path.join(governed, 'audit-signing.key'))).publicKeyHex;
let complete = 0;
let verified = 0;
const found = journalFiles().length;
for (const file of journalFiles()) {
  const { report, exitCode } = inspectJournal(path.join(governed, file), file.replace(/\.jsonl$/, ''), publicKey);
  if (report.journal_complete) complete += 1;
  // A complete journal that exits 2 counts: a cancelled provider call is an unknown effect to reconcile, not a loss.
  if (exitCode !== 1 && report.journal_complete) verified += 1;
}
const latencies = stderr
  .slice(warmupStderrBytes)
  .split('\n')
  .flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { cancel_to_terminal_ms?: number };
      return typeof entry.cancel_to_terminal_ms === 'number' ? [entry.cancel_to_terminal_ms] : [];
    } catch {
      return [];
    }
  })
  .sort((a, b) => a - b);
const pct = (p: number): number => (latencies.length === 0 ? 0 : latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!);

clearInterval(sampler);
await client.close();
await endpoint.close();
fs.rmSync(project, { recursive: true, force: true });

const result = {
  invocations: total,
  concurrency,
  cancelled: cancelledCount,
  warmup_invocations: warmup,
  journals_expected: total + warmup,
  journals_found: found,
  journals_complete: complete,
  journals_verified: verified,
  lost: total + warmup - verified,
  open_connections_after_cancel: openConnections,
  cancel_to_terminal_p50_ms: pct(50),
  cancel_to_terminal_p99_ms: pct(99),
  cancel_samples: latencies.length,
  server_peak_rss_mb: Math.round(peakRssKiB / 1024),
  wall_seconds: Number(wallSeconds.toFixed(2)),
};
process.stdout.write(
  [
    `stress-cancel: ${total} invocations at concurrency ${concurrency}, ${cancelledCount} cancelled at random moments (after ${warmup} warm-up invocations)`,
    `  journals expected ${result.journals_expected}, found ${found}, complete ${complete}, verified ${verified}, lost ${result.lost} (target 0)`,
    `  provider connections still open after cancel: ${openConnections} (target 0)`,
    `  cancel-to-terminal latency p50 ${result.cancel_to_terminal_p50_ms} ms, p99 ${result.cancel_to_terminal_p99_ms} ms over ${latencies.length} cancels (target p99 <= 20 ms)`,
    `  server peak RSS ${result.server_peak_rss_mb} MB (target < 300 MB); wall ${result.wall_seconds} s`,
    `BENCH_JSON ${JSON.stringify(result)}`,
    '',
  ].join('\n'),
);
process.exit(result.lost === 0 && openConnections === 0 ? 0 : 1);

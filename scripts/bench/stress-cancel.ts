// Stress the cancellation guarantee, one row per concurrency: N invocations with C calls in flight
// against the synthetic endpoint (provider delays 0-200 ms), a random half cancelled at random
// moments and each replaced at once, so the client never has more than C calls it has neither
// cancelled nor seen answered. Then every journal is inspected. Each row runs its own server
// (peak RSS is that server's), at the default capacity unless the row names one.
//
// Usage: node --import tsx scripts/bench/stress-cancel.ts [--rows 64,256,512,4096:4096] [--n 500] [--warmup 64]
//   --rows  concurrency[:max-invocations], comma-separated (default 64)
//   --n     calls per row, at least 3 x its concurrency (default 500)
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { signingKeyFromSeed } from '../../src/shared/signing/signing-key.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

/** Cancel to durable terminal record, p99, up to this many calls in flight (issue 36). */
const P99_TARGET_MS = 20;
/** The p99 at 512 in flight against the p99 at 64 in flight, measured in the same run. */
const FLATNESS_TARGET = 1.5;
/** Server peak RSS targets: the default-capacity rows, and a row with a capacity of its own (4,096). */
const RSS_TARGET_MB = 300;
const RSS_TARGET_LARGE_MB = 600;

const { values } = parseArgs({
  options: { rows: { type: 'string', default: '64' }, n: { type: 'string', default: '500' }, warmup: { type: 'string', default: '64' } },
});
const minimumCalls = Number(values.n);
const warmup = Number(values.warmup);
const rowSpecs = values.rows.split(',').map((spec) => {
  const [c, cap] = spec.split(':');
  return { concurrency: Number(c), maxInvocations: cap === undefined ? undefined : Number(cap) };
});
const whole = (n: number | undefined, min: number): boolean => n === undefined || (Number.isInteger(n) && n >= min);
if (!whole(minimumCalls, 1) || !whole(warmup, 0) || rowSpecs.some((r) => !whole(r.concurrency, 1) || !whole(r.maxInvocations, 1))) {
  process.stderr.write('usage: stress-cancel [--rows C[:MAX],...] [--n N>=1] [--warmup W>=0]\n');
  process.exit(2);
}

// Every lane whose request waits for the server's standard input to drain adds one 'drain'
// listener there (the SDK's transport): hundreds at once are expected, not a leak.
EventEmitter.defaultMaxListeners = 8192;

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');

interface RowResult {
  invocations: number;
  concurrency: number;
  max_invocations: number | 'default';
  cancelled: number;
  refused_at_capacity: number;
  warmup_invocations: number;
  journals_expected: number;
  journals_found: number;
  journals_complete: number;
  journals_verified: number;
  lost: number;
  open_connections_after_cancel: number;
  cancel_to_terminal_p50_ms: number;
  cancel_to_terminal_p99_ms: number;
  cancel_samples: number;
  server_peak_rss_mb: number;
  wall_seconds: number;
}

async function stressRow(endpoint: SyntheticEndpoint, concurrency: number, maxInvocations: number | undefined): Promise<RowResult> {
  const total = Math.max(minimumCalls, 3 * concurrency);
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-stress-'));
  fs.mkdirSync(path.join(project, 'agents'));
  fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n  capabilities = ["answer"]\n}\n');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      ...(process.env.STRESS_NODE_ARGS ? process.env.STRESS_NODE_ARGS.split(' ') : []),
      path.join(repoRoot, 'bin', 'symbi.js'),
      'mcp',
      '--project',
      project,
      '--log-format',
      'json',
      ...(maxInvocations === undefined ? [] : ['--max-invocations', String(maxInvocations)]),
    ],
    env: {
      ...(process.env.UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE } : {}),
      PATH: process.env.PATH ?? '',
      HOME: os.tmpdir(),
      OPENAI_BASE_URL: endpoint.url,
      OPENAI_API_KEY: 'stress',
      CHAT_MODEL: 'synthetic',
    },
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
  let refused = 0;
  // Each lane holds one call the client waits on: a cancelled call is over for the client at once,
  // so the lane's next call goes out right after the cancel.
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
      const result = await client
        .callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `run ${i} [[delay:${providerDelay}]]` } }, undefined, {
          signal: controller.signal,
          timeout: 120_000,
        })
        .catch(() => undefined);
      const text = (result as CallToolResult | undefined)?.content?.[0];
      if (text?.type === 'text' && text.text.includes('at capacity')) refused += 1;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));

  // Cancelled calls return to the client before their terminal records land; wait for the journals to settle.
  const governed = path.join(project, '.symbiont', 'governed');
  const journalFiles = (): string[] => (fs.existsSync(governed) ? fs.readdirSync(governed).filter((f) => f.endsWith('.jsonl')) : []);
  const expected = total - refused + warmup;
  const settleUntil = Date.now() + 15_000;
  while (Date.now() < settleUntil) {
    const files = journalFiles();
    const open = files.filter((f) => !fs.readFileSync(path.join(governed, f), 'utf8').includes('"Terminated"'));
    if (files.length >= expected && open.length === 0) break;
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
    const { report, exitCode } = inspectJournal(
      path.join(governed, file),
      file
        .replace(/\.jsonl$/, '')
        .split('.')
        .at(-1)!,
      publicKey,
    );
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
  fs.rmSync(project, { recursive: true, force: true });

  const result: RowResult = {
    invocations: total,
    concurrency,
    max_invocations: maxInvocations ?? 'default',
    cancelled: cancelledCount,
    refused_at_capacity: refused,
    warmup_invocations: warmup,
    journals_expected: expected,
    journals_found: found,
    journals_complete: complete,
    journals_verified: verified,
    lost: expected - verified,
    open_connections_after_cancel: openConnections,
    cancel_to_terminal_p50_ms: pct(50),
    cancel_to_terminal_p99_ms: pct(99),
    cancel_samples: latencies.length,
    server_peak_rss_mb: Math.round(peakRssKiB / 1024),
    wall_seconds: Number(wallSeconds.toFixed(2)),
  };
  process.stdout.write(
    [
      `stress-cancel: ${total} invocations at concurrency ${concurrency} (capacity ${result.max_invocations}), ${cancelledCount} cancelled at random moments (after ${warmup} warm-up invocations)`,
      `  journals expected ${result.journals_expected}, found ${found}, complete ${complete}, verified ${verified}, lost ${result.lost} (target 0)`,
      `  refused at capacity ${refused} (target 0); provider connections still open after cancel: ${openConnections} (target 0)`,
      `  cancel-to-terminal latency p50 ${result.cancel_to_terminal_p50_ms} ms, p99 ${result.cancel_to_terminal_p99_ms} ms over ${latencies.length} cancels`,
      `  server peak RSS ${result.server_peak_rss_mb} MB; wall ${result.wall_seconds} s`,
      '',
    ].join('\n'),
  );
  return result;
}

interface Row {
  figure: string;
  measured: string;
  peer: string;
  target: string;
  met: boolean | undefined;
}

const endpoint = await startSyntheticEndpoint();
const runs: RowResult[] = [];
for (const spec of rowSpecs) runs.push(await stressRow(endpoint, spec.concurrency, spec.maxInvocations));
await endpoint.close();

const rows: Row[] = [];
for (const r of runs) {
  const where = `${r.concurrency.toLocaleString('en-US')} in flight${r.max_invocations === 'default' ? '' : ` (--max-invocations ${r.max_invocations})`}`;
  const large = r.concurrency > 512;
  const rssTarget = large ? RSS_TARGET_LARGE_MB : RSS_TARGET_MB;
  rows.push(
    {
      figure: `stress-cancel at ${where}: ${r.invocations.toLocaleString('en-US')} calls, ${r.cancelled.toLocaleString('en-US')} cancelled: lost journals / refused at capacity`,
      measured: `${r.lost} / ${r.refused_at_capacity} (${r.journals_verified.toLocaleString('en-US')} of ${r.journals_expected.toLocaleString('en-US')} verified)`,
      peer: '',
      target: '0 / 0',
      met: r.lost === 0 && r.refused_at_capacity === 0,
    },
    {
      figure: `stress-cancel: cancel to terminal record at ${where}, p50 / p99`,
      measured: `${r.cancel_to_terminal_p50_ms} / ${r.cancel_to_terminal_p99_ms} ms`,
      peer: '',
      target: large ? '' : `p99 <= ${P99_TARGET_MS} ms`,
      met: large ? undefined : r.cancel_to_terminal_p99_ms <= P99_TARGET_MS,
    },
    {
      figure: `stress-cancel at ${where}: server peak RSS`,
      measured: `${r.server_peak_rss_mb} MB`,
      peer: '',
      target: `< ${rssTarget} MB`,
      met: r.server_peak_rss_mb < rssTarget,
    },
  );
}
const connections = runs.reduce((sum, r) => sum + r.open_connections_after_cancel, 0);
rows.push({ figure: 'stress-cancel: provider connections open after cancel', measured: String(connections), peer: '', target: '0', met: connections === 0 });
const at64 = runs.find((r) => r.concurrency === 64 && r.max_invocations === 'default');
const at512 = runs.find((r) => r.concurrency === 512 && r.max_invocations === 'default');
if (at64 !== undefined && at512 !== undefined && at64.cancel_to_terminal_p99_ms > 0) {
  const ratio = at512.cancel_to_terminal_p99_ms / at64.cancel_to_terminal_p99_ms;
  rows.push({
    figure: 'stress-cancel: cancel to terminal p99, 512 in flight over 64 in flight',
    measured: `${ratio.toFixed(2)}x`,
    peer: '',
    target: `<= ${FLATNESS_TARGET}x`,
    met: ratio <= FLATNESS_TARGET,
  });
}
process.stdout.write(`BENCH_JSON ${JSON.stringify({ rows, runs })}\n`);
const ok = runs.every((r) => r.lost === 0 && r.open_connections_after_cancel === 0);
process.exit(ok ? 0 : 1);

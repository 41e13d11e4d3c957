// The DSL figure a user sees: a `parse_dsl` round trip over stdio on the
// largest of Symbiont's example agents (agents/workflow_orchestrator.dsl in
// ThirdKeyAI/Symbiont, kept in test/fixtures/dsl/symbiont/), 2,000 calls
// after 200 warm-up calls, p50 and p99. Target: p50 at most 1 ms. Beside it,
// the in-process parse and report of the same text, for scale.
// Run after `npm run build`: node --import tsx scripts/bench/bench-parse.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { parseDslReport } from '../../src/shared/dsl/parse-report.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const symbiBin = path.join(repo, 'bin', 'symbi.js');
const SAMPLE = 'workflow_orchestrator.dsl';
const samplePath = path.join(repo, 'test', 'fixtures', 'dsl', 'symbiont', SAMPLE);
const CALLS = 2000;
const WARMUP = 200;
const TARGET_P50_MS = 1;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function timeCalls(once: () => Promise<void> | void): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < WARMUP; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function main(): Promise<void> {
  const text = fs.readFileSync(samplePath, 'utf8');
  const expected = parseDslReport(text, `agents/${SAMPLE}`);
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-parse-'));
  try {
    fs.mkdirSync(path.join(project, 'agents'));
    fs.writeFileSync(path.join(project, 'agents', SAMPLE), text);
    const transport = new StdioClientTransport({ command: process.execPath, args: [symbiBin, 'mcp', '--project', project], stderr: 'ignore' });
    const client = new Client({ name: 'bench-parse', version: '1.0.0' });
    await client.connect(transport);
    const roundTrip = await timeCalls(async () => {
      const result = (await client.callTool({ name: 'parse_dsl', arguments: { file: `agents/${SAMPLE}` } })) as {
        content: Array<{ text: string }>;
        isError?: boolean;
      };
      const report = JSON.parse(result.content[0]?.text ?? 'null') as { errors?: unknown[] } | null;
      if (result.isError || report?.errors?.length !== expected.errors.length) throw new Error('parse_dsl returned an unexpected report');
    });
    await client.close();
    const inProcess = await timeCalls(() => {
      parseDslReport(text, `agents/${SAMPLE}`);
    });
    const fmt = (n: number) => n.toFixed(3);
    console.log(
      `parse_dsl round trip on ${SAMPLE} (${Buffer.byteLength(text)} bytes): p50 ${fmt(roundTrip.p50)} ms, p99 ${fmt(roundTrip.p99)} ms (target p50 <= ${TARGET_P50_MS} ms)`,
    );
    console.log(`in-process parse and report of the same text: p50 ${fmt(inProcess.p50)} ms, p99 ${fmt(inProcess.p99)} ms`);
    console.log(
      `BENCH_JSON ${JSON.stringify({
        sample: SAMPLE,
        sample_bytes: Buffer.byteLength(text),
        parse_dsl_p50_ms: roundTrip.p50,
        parse_dsl_p99_ms: roundTrip.p99,
        in_process_p50_ms: inProcess.p50,
        in_process_p99_ms: inProcess.p99,
        targets_met: roundTrip.p50 <= TARGET_P50_MS,
      })}`,
    );
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
}

await main();

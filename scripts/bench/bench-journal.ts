// Journal benchmark: the writer's cost per record including fdatasync, and the
// verifier's throughput on a 10,000-record journal, in one run on this
// machine. Targets (issue 4): writer p50 <= 0.5 ms per record, verification
// >= 5,000 records/s with Node.js crypto.
// Run: node --import tsx scripts/bench/bench-journal.ts
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pinProject } from '../../src/shared/confinement/index.js';
import { openAuditStorage, closeAuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter } from '../../src/shared/journal/journal-writer.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { sha256Hex } from '../../src/shared/canonical-json.js';

const RECORDS = 10_000;
const VERIFY_ROUNDS = 3;
const CROSS_CHECK_RECORDS = 200;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-journal-'));
try {
  const storage = openAuditStorage(pinProject(dir));
  const runId = crypto.randomUUID();
  const agent = responsePrincipal('declared');
  const writer = await JournalWriter.create(storage, runId, agent);
  const hash = sha256Hex('response');
  // Records shaped like the real ones (hashes and sizes, about 600-700 bytes a line).
  const costs: number[] = [];
  const time = async (fn: () => Promise<void>) => {
    const t0 = performance.now();
    await fn();
    costs.push(performance.now() - t0);
  };
  await time(() =>
    writer.append({
      Started: {
        execution_context: {
          agent_definition: { name: 'declared', source_hash: hash, declaration_hash: hash, mode: 'text_response', surface: 'mcp-server', tools_enabled: false },
        },
      },
    }),
  );
  for (let i = 1; i < RECORDS - 1; i += 1) {
    const callId = `call-${i}`;
    await time(() =>
      writer.append({
        DirectInferenceRequested: {
          call_id: callId,
          operation: 'mcp-server',
          provider: 'synthetic',
          model: 'bench-model',
          request_hash: hash,
          request_bytes: 1234,
          recipient: agent,
          recipient_definition_hash: hash,
        },
      }),
    );
    i += 1;
    if (i >= RECORDS - 1) break;
    await time(() =>
      writer.append({
        DirectInferenceFinished: {
          call_id: callId,
          reason: 'Completed',
          response_hash: hash,
          response_bytes: 321,
          finish_reason: 'stop',
          usage: { input_tokens: 10, output_tokens: 20 },
        },
      }),
    );
  }
  await time(() => writer.appendTerminal('Completed'));
  await writer.close();
  const bytes = fs.statSync(writer.path).size;
  costs.sort((a, b) => a - b);
  const writerP50 = percentile(costs, 50);
  const writerP99 = percentile(costs, 99);
  const writerPerS = costs.length / (costs.reduce((a, b) => a + b, 0) / 1000);

  let bestVerifyMs = Infinity;
  let records = 0;
  for (let r = 0; r < VERIFY_ROUNDS; r += 1) {
    const t0 = performance.now();
    const { report, exitCode } = inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex);
    const ms = performance.now() - t0;
    if (exitCode !== 0) throw new Error(`benchmark journal did not verify: ${report.error?.message}`);
    records = report.records;
    bestVerifyMs = Math.min(bestVerifyMs, ms);
  }
  // tweetnacl is about 100 times slower, so the cross-check rate is measured on a short journal.
  const shortRun = crypto.randomUUID();
  const short = await JournalWriter.create(storage, shortRun, agent);
  await short.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
  for (let i = 0; i < CROSS_CHECK_RECORDS - 2; i += 1)
    await short.append({ PolicyEvaluated: { action: 'respond', decision: 'allow', response_hash: hash, denied_count: 0 } });
  await short.appendTerminal('Completed');
  await short.close();
  const t1 = performance.now();
  const crossChecked = inspectJournal(short.path, shortRun, storage.signingKey.publicKeyHex, { crossCheck: true });
  const crossCheckMs = performance.now() - t1;
  if (crossChecked.exitCode !== 0) throw new Error('cross-check journal did not verify');
  closeAuditStorage(storage);

  const result = {
    bench: 'journal',
    records,
    journal_bytes: bytes,
    writer_p50_ms: round(writerP50),
    writer_p99_ms: round(writerP99),
    writer_records_per_s: Math.round(writerPerS),
    writer_target_p50_ms: 0.5,
    verify_records_per_s: Math.round(records / (bestVerifyMs / 1000)),
    verify_target_records_per_s: 5000,
    verify_cross_check_records_per_s: Math.round(CROSS_CHECK_RECORDS / (crossCheckMs / 1000)),
    load_average_1m: round(os.loadavg()[0]!, 2),
  };
  console.log(
    `writer: ${costs.length} records with fdatasync, p50 ${result.writer_p50_ms} ms, p99 ${result.writer_p99_ms} ms, ${result.writer_records_per_s} records/s (target p50 <= 0.5 ms)`,
  );
  console.log(
    `inspect: ${records} records (${(bytes / 1024 / 1024).toFixed(1)} MiB) at ${result.verify_records_per_s} records/s with Node.js crypto (target >= 5000/s); with --cross-check (tweetnacl too) ${result.verify_cross_check_records_per_s} records/s`,
  );
  console.log(`BENCH_JSON ${JSON.stringify(result)}`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

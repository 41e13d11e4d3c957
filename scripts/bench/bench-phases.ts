// Where the time of one governed call goes. Runs the worker's invocation (performInvocation) in
// this process, on a copy of examples/quickstart (its sample Cedar policy) against the synthetic
// endpoint, and times each protocol step between the durable points; beside it, the same HTTP
// call alone, one Cedar decision alone and one fdatasync alone, interleaved call by call so the
// machine's noise falls on each the same way. What the MCP round trip adds on top (stdio, the
// SDK, the supervisor, the thread hops) is the invoke benchmark's p50 minus this total.
//
// Usage: node --import tsx scripts/bench/bench-phases.ts [calls]   (prints a last BENCH_JSON line)
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { canonicalHash, sha256Hex } from '../../src/shared/canonical-json.js';
import { pinProject } from '../../src/shared/confinement/index.js';
import { authorizeRespond, preparePolicySet } from '../../src/shared/policy/respond-authorization.js';
import { providerFromEnvironment } from '../../src/shared/provider/provider-config.js';
import type { InvokeTask, RunPhase } from '../../src/shared/worker-protocol.js';
import { refusalText } from '../../src/supervisor/runs/agent-refusal.js';
import { preflightInvocation } from '../../src/supervisor/runs/invoke-preflight.js';
import { createOperatorLog } from '../../src/supervisor/operator/operator-log.js';
import { projectLocationCheck } from '../../src/supervisor/runs/project-location-check.js';
import { takeStartupSnapshot } from '../../src/supervisor/startup/startup-snapshot.js';
import { respondRequestFor } from '../../src/shared/policy/respond-request.js';
import { buildConversation } from '../../src/worker/conversation.js';
import { performInvocation } from '../../src/worker/invocation.js';
import { reserveNextJournalFile } from '../../src/worker/journal-reserve.js';
import { callProvider } from '../../src/worker/providers/provider-call.js';
import type { WorkerResources } from '../../src/worker/worker-resources.js';
import type { TypedInferenceRequest } from '../../src/shared/provider/inference-types.js';
import { startSyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const CALLS = Number(process.argv[2] ?? 400);
const WARMUP = 50;
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const endpoint = await startSyntheticEndpoint();
const projectDir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-bench-phases-'));
fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), projectDir, { recursive: true });
const project = pinProject(projectDir);
const { snapshot, auditStorage } = takeStartupSnapshot(project);
if (auditStorage === null || auditStorage.pinnedKey === undefined) throw new Error('bench-phases: the quickstart copy has no audit signing key');
if (snapshot.policy.set.mode !== 'configured') throw new Error('bench-phases: the quickstart policy did not load');
const provider = providerFromEnvironment({ OPENAI_BASE_URL: endpoint.url, OPENAI_API_KEY: 'bench', CHAT_MODEL: 'synthetic' });
if (!provider.ok) throw new Error(provider.message);

// One run at a time, as on a worker thread with no other run in flight: its journal syncs in the thread.
const resources: WorkerResources = {
  project,
  policySet: snapshot.policy.set,
  provider: provider.config,
  signingKey: auditStorage.pinnedKey.key,
  signingKeyFile: auditStorage.pinnedKey,
  journalSyncInThread: () => true,
};
preparePolicySet(resources.policySet);
const preflight = preflightInvocation(
  { agent: 'assistant', prompt: 'hello' },
  {
    projectAccess: snapshot.projectAccess,
    projectLocation: projectLocationCheck(project.fd, project.displayPath, createOperatorLog('text')),
    registry: snapshot.registry,
    policySet: snapshot.policy.set,
    provider,
    signingKey: { unusable: undefined },
  },
);
if (!preflight.ok) throw new Error(refusalText(preflight.refusal));
const { definition } = preflight;

/** The phases, in protocol order; each ends at a point performInvocation reports. */
const PHASES = [
  ['open journal; Started + DirectInferenceRequested signed and fdatasynced', 'journal_opened'],
  ['provider HTTP call; response hashed; ResponseReceived + Finished signed and fdatasynced', 'response_received'],
  ['Cedar decision on the exact text; PolicyEvaluated + terminal record signed and fdatasynced', 'policy_evaluated'],
  ['close the journal, finish the run', 'end'],
] as const;

async function governedCall(): Promise<number[]> {
  const { port1, port2 } = new MessageChannel();
  const marks = new Map<RunPhase | 'end', number>();
  const task: InvokeTask = { runId: randomUUID(), definition, prompt: 'hello', reportProgress: false, port: port2, handover: new SharedArrayBuffer(4) };
  const t0 = performance.now();
  const outcome = await performInvocation(task, resources, { afterNotice: (phase) => marks.set(phase, performance.now()) });
  marks.set('end', performance.now());
  // As a worker thread does after each run (invoke-task.ts): the next run's journal file, made outside the timed call.
  reserveNextJournalFile(resources);
  port1.close();
  port2.close();
  if (!outcome.ok) throw new Error(`bench-phases: the governed call failed: ${outcome.message}`);
  let last = t0;
  return PHASES.map(([, mark]) => {
    const at = marks.get(mark)!;
    const spent = at - last;
    last = at;
    return spent;
  });
}

const typedRequest: TypedInferenceRequest = {
  conversation: buildConversation({ definition, prompt: 'hello' }),
  options: { provider: provider.config.kind, model: provider.config.model, max_tokens: provider.config.maxOutputTokens },
};
async function bareCall(): Promise<number> {
  const t0 = performance.now();
  await callProvider(resources.provider, typedRequest, new AbortController().signal);
  return performance.now() - t0;
}

const content = 'Hello from the synthetic endpoint.';
const decisionRequest = respondRequestFor(definition, randomUUID(), {
  content,
  sha256: sha256Hex(content),
  bytes: Buffer.byteLength(content),
  finish_reason: 'complete',
  provider_finish_reason: 'stop',
});
function cedarDecision(): number {
  const t0 = performance.now();
  if (authorizeRespond(resources.policySet, decisionRequest).decision !== 'allow') throw new Error('bench-phases: the sample policy denied the plain answer');
  return performance.now() - t0;
}

const syncFile = path.join(projectDir, 'fdatasync-probe');
const syncFd = fs.openSync(syncFile, 'w');
const line = Buffer.from(`${JSON.stringify(canonicalHash(typedRequest))}\n`);
function fdatasync(): number {
  const t0 = performance.now();
  fs.writeSync(syncFd, line);
  fs.fdatasyncSync(syncFd);
  return performance.now() - t0;
}

const governed: number[][] = [];
const bare: number[] = [];
const cedar: number[] = [];
const syncs: number[] = [];
for (let i = 0; i < WARMUP + CALLS; i += 1) {
  const phases = await governedCall();
  const alone = await bareCall();
  const decision = cedarDecision();
  const sync = fdatasync();
  if (i < WARMUP) continue;
  governed.push(phases);
  bare.push(alone);
  cedar.push(decision);
  syncs.push(sync);
}
fs.closeSync(syncFd);
await endpoint.close();
fs.rmSync(projectDir, { recursive: true, force: true });

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.floor(sorted.length / 2)]!.toFixed(3));
}

const phaseMedians = PHASES.map(([label], i) => ({ phase: label, p50_ms: median(governed.map((p) => p[i]!)) }));
const result = {
  calls: CALLS,
  phases: phaseMedians,
  total_p50_ms: median(governed.map((p) => p.reduce((s, x) => s + x, 0))),
  http_call_alone_p50_ms: median(bare),
  cedar_decision_alone_p50_ms: median(cedar),
  fdatasync_alone_p50_ms: median(syncs),
};
process.stdout.write(
  [
    `per-phase breakdown of one governed call (in process, quickstart policy, ${CALLS} calls, medians):`,
    ...phaseMedians.map((p) => `  ${p.p50_ms.toFixed(3)} ms  ${p.phase}`),
    `  ${result.total_p50_ms.toFixed(3)} ms  total; alone: HTTP call ${result.http_call_alone_p50_ms} ms, Cedar decision ${result.cedar_decision_alone_p50_ms} ms, one write + fdatasync ${result.fdatasync_alone_p50_ms} ms`,
    `BENCH_JSON ${JSON.stringify(result)}`,
    '',
  ].join('\n'),
);

// The worker-thread half of scripts/bench/measure-worker-memory.ts (plain JavaScript
// over dist/, since tsx's loader does not reach worker threads on Node.js 20).
// It runs the real invocation code and samples this thread's V8 heap.
import { randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import { MessageChannel, parentPort, workerData } from 'node:worker_threads';
import { PinnedDirectory, pinProject } from '../../dist/shared/confinement/index.js';
import { closeAuditStorage, openAuditStorage } from '../../dist/shared/storage/audit-storage.js';
import { loadPolicySet } from '../../dist/shared/policy/policy-set.js';
import { preparePolicySet } from '../../dist/shared/policy/respond-authorization.js';
import { responsePrincipal } from '../../dist/shared/agent-identity.js';
import { sha256Hex } from '../../dist/shared/canonical-json.js';
import { performInvocation } from '../../dist/worker/invocation.js';

const MIB = 1024 * 1024;
const mb = (bytes) => Math.round((bytes / MIB) * 10) / 10;
const { project, warmUpUrl, declarationBytes, promptBytes } = workerData;

const pinned = pinProject(project);
const storage = openAuditStorage(pinned);
closeAuditStorage(storage);
// One permit and one forbid, so Cedar evaluates a policy on every exact text.
const policySet = loadPolicySet([
  {
    path: 'policies/mcp-server/respond.cedar',
    text:
      'permit(principal, action == Action::"respond", resource);\n' +
      'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n',
  },
]);
preparePolicySet(policySet);

function definition(largeRequest) {
  const declarationText = largeRequest ? `agent assistant {\n  // ${'d'.repeat(declarationBytes)}\n}` : 'agent assistant {\n  capabilities = ["answer"]\n}';
  return {
    stem: 'assistant',
    file: 'agents/assistant.symbi',
    declaredName: 'assistant',
    principal: responsePrincipal('assistant'),
    sourceHash: sha256Hex(declarationText),
    declarationText,
    declarationHash: sha256Hex(declarationText),
    capabilities: ['answer'],
    timeoutMs: 120_000,
  };
}

let peakUsed = 0;
let peakExternal = 0;
let waiting = 0;
let waitingTarget = Infinity;
let heldLive = 0;
function sample(phase) {
  const stats = v8.getHeapStatistics();
  peakUsed = Math.max(peakUsed, stats.used_heap_size);
  peakExternal = Math.max(peakExternal, stats.external_memory);
  // Once every run's request is out, a full GC shows what waiting runs keep alive.
  if (phase === 'request_sent' && ++waiting === waitingTarget) {
    setImmediate(() => {
      globalThis.gc();
      heldLive = v8.getHeapStatistics().used_heap_size;
    });
  }
}

async function runAll(scenario, url) {
  const provider = { kind: 'openai', baseUrl: url, model: 'synthetic', apiKey: 'measure' };
  const resources = { project: pinned, policySet, provider, signingKey: storage.signingKey, signingKeyFile: storage.pinnedKey };
  const prompt = `${scenario.largeRequest ? 'p'.repeat(promptBytes) : 'hello'}${scenario.hold === false ? '' : ' [[hold]]'}`;
  const outcomes = await Promise.all(
    Array.from({ length: scenario.runs }, async () => {
      const { port1, port2 } = new MessageChannel();
      try {
        return await performInvocation(
          { runId: randomUUID(), definition: definition(scenario.largeRequest), prompt, reportProgress: false, port: port2 },
          resources,
          sample,
        );
      } finally {
        port1.close();
        port2.close();
      }
    }),
  );
  for (const o of outcomes) if (!o.ok) process.stderr.write(`run failed: ${o.message}\n`);
  const completed = outcomes.filter((o) => o.ok).length;
  return { completed, failed: outcomes.length - completed };
}

parentPort.on('message', async (message) => {
  if (message.type === 'idle') {
    await runAll({ runs: 1, largeRequest: false, largeResponse: false, hold: false }, warmUpUrl);
    globalThis.gc();
    parentPort.postMessage({ idleMb: mb(v8.getHeapStatistics().used_heap_size) });
    return;
  }
  const { scenario } = message;
  globalThis.gc();
  const baseline = v8.getHeapStatistics().used_heap_size;
  peakUsed = baseline;
  peakExternal = 0;
  waiting = 0;
  waitingTarget = scenario.runs;
  heldLive = 0;
  const timer = setInterval(() => sample(), 1);
  const { completed, failed } = await runAll(scenario, message.url);
  clearInterval(timer);
  sample();
  parentPort.postMessage({
    name: scenario.name,
    baselineMb: mb(baseline),
    heldLiveMb: mb(heldLive),
    peakUsedMb: mb(peakUsed),
    peakExternalMb: mb(peakExternal),
    completed,
    failed,
  });
});

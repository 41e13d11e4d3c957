// Cost of one Cedar decision for Action::"respond": authorizeRespond on an exact response,
// and canPermitSomeResponse (partial evaluation, response unknown), each with one small policy.
// Run: node --import tsx scripts/bench/bench-policy.ts [calls]
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { loadPolicySet } from '../../src/shared/policy/policy-set.js';
import { authorizeRespond, canPermitSomeResponse, type RespondRequest } from '../../src/shared/policy/respond-authorization.js';

const CALLS = Number(process.argv[2] ?? 5000);
const WARMUP = 200;

const set = loadPolicySet([
  { path: 'policies/respond.cedar', text: 'permit(principal, action == Action::"respond", resource) unless { context.response.content like "*secret*" };' },
]);
if (set.mode !== 'configured') throw new Error(`bench policy did not load: ${set.denyReason ?? set.mode}`);

const content = 'A short, ordinary answer of about a hundred and twenty characters, as a model would give to a quick question.';
const request: RespondRequest = {
  principal: responsePrincipal('declared'),
  agentName: 'declared',
  capabilities: ['read', 'analyze'],
  context: {
    surface: 'mcp-server',
    mode: 'text_response',
    tools_enabled: false,
    run_id: '7d1f6f39-3a4c-4b55-9a43-0d2a2f1f9c11',
    agent: {
      name: 'declared',
      file: 'agents/declared.symbi',
      source_hash: 'a'.repeat(64),
      declaration_hash: 'b'.repeat(64),
      capabilities: ['read', 'analyze'],
    },
    response: {
      content,
      sha256: createHash('sha256').update(content).digest('hex'),
      bytes: Buffer.byteLength(content),
      finish_reason: 'complete',
      provider_finish_reason: 'stop',
    },
  },
};
const { response: _response, ...contextWithoutResponse } = request.context;
const beforeInference = { ...request, context: contextWithoutResponse };

function measure(label: string, call: () => boolean): { p50_ms: number; p99_ms: number; mean_ms: number } {
  for (let i = 0; i < WARMUP; i += 1) if (!call()) throw new Error(`${label}: unexpected outcome`);
  const samples = new Float64Array(CALLS);
  for (let i = 0; i < CALLS; i += 1) {
    const start = performance.now();
    const ok = call();
    samples[i] = performance.now() - start;
    if (!ok) throw new Error(`${label}: unexpected outcome`);
  }
  samples.sort();
  const at = (q: number): number => round(samples[Math.min(CALLS - 1, Math.floor(q * CALLS))] ?? NaN);
  const mean = round(samples.reduce((sum, x) => sum + x, 0) / CALLS);
  const result = { p50_ms: at(0.5), p99_ms: at(0.99), mean_ms: mean };
  process.stderr.write(`${label}: p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, mean ${result.mean_ms} ms over ${CALLS} calls\n`);
  return result;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

const authorize = measure('authorizeRespond', () => authorizeRespond(set, request).decision === 'allow');
// A fresh agent name each call, as the preflight meets each agent once per session (it keeps the verdict).
const freshAgents = Array.from({ length: CALLS + WARMUP }, (_, i) => {
  const name = `agent-${i}`;
  return {
    ...beforeInference,
    principal: responsePrincipal(name),
    agentName: name,
    context: { ...beforeInference.context, agent: { ...beforeInference.context.agent, name } },
  };
});
let next = 0;
const partial = measure('canPermitSomeResponse (partial evaluation)', () => canPermitSomeResponse(set, freshAgents[next++ % freshAgents.length]!).possible);

console.log(
  `BENCH_JSON ${JSON.stringify({ bench: 'policy', calls: CALLS, policies: set.policies.length, authorizeRespond: authorize, canPermitSomeResponse: partial })}`,
);

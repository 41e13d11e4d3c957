import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SECRET_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer, type InProcessServer } from '../support/in-process-server.js';
import { auditOf, providerEnv, textOf } from '../support/server.js';
import { eventNames, inspect, journalsIn, readJournal } from '../support/journal.js';
import { ROUTE_SEQUENCES } from '../support/symbiont-route.js';
import { repoRoot as repo } from '../support/server-entry.js';

// A forbid that Cedar cannot evaluate must never release the text it was
// written to withhold. Cedar skips a policy whose evaluation errors, so a set
// holding one is refused at startup when the respond schema can tell (type
// errors, attributes the schema does not name, misused extension functions),
// and any decision in which a policy errors anyway is a deny naming it.
// What the tool answers and the operator log says is the session's logic: served in process
// (test/support/in-process-server.ts) against the synthetic endpoint, whose `[[secret]]` answer
// contains the word "secret".

const QUICKSTART_PERMIT = fs.readFileSync(path.join(repo, 'policies', 'examples', 'permit-respond.cedar'), 'utf8');
const AGENT = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

function projectWith(forbid: string): string {
  return makeProject({ ...AGENT, 'policies/permit-respond.cedar': QUICKSTART_PERMIT, 'policies/mcp-server/forbid.cedar': forbid });
}

describe('a forbid policy that fails validation against the respond schema', () => {
  let endpoint: SyntheticEndpoint;
  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
  });

  const broken = [
    ['a type error (contains on a String)', 'forbid (principal, action, resource) when { context.response.content.contains("secret") };', /unexpected type/],
    [
      'an attribute the schema does not name',
      'forbid (principal, action, resource) when { context.response.text like "*secret*" };',
      /attribute `response\.text` in context for Action::"respond" not found/,
    ],
    [
      'an extension function misused',
      'forbid (principal, action, resource) when { context.response.content like "*secret*" && ip("x").isLoopback() };',
      /failed to parse as IP address/,
    ],
    [
      'an extension constructor on the response',
      'forbid (principal, action, resource) when { decimal(context.response.content).lessThan(decimal("1.0")) };',
      /extension constructors may not be called with non-literal expressions/,
    ],
  ] as const;

  for (const [label, forbid, why] of broken) {
    it(`${label}: the set denies all, named on stderr and in the refusal, and the text never leaves`, async () => {
      const project = projectWith(forbid);
      const server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
      try {
        const sent = endpoint.requests.length;
        const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'tell me [[secret]]' } });
        assert.equal(result.isError, true, textOf(result));
        const text = textOf(result);
        assert.ok(!text.includes(SECRET_ANSWER), 'the answer is withheld');
        assert.match(text, /denies every response/);
        assert.match(text, /policies\/mcp-server\/forbid\.cedar:1: /);
        assert.match(text, why);
        assert.equal(endpoint.requests.length, sent, 'refused before the provider was called');
        assert.deepEqual(journalsIn(project).length, 0);
        const stderr = server.stderr();
        const line = stderr.split('\n').find((l) => l.includes('denies every response'));
        assert.ok(line, stderr);
        assert.match(line, /policies\/mcp-server\/forbid\.cedar:1: line 1, column \d+: /);
        assert.match(line, why);
      } finally {
        await server.close();
        removeProject(project);
      }
    });
  }
});

describe('a forbid policy whose evaluation errors only for some responses', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: InProcessServer;
  // Valid against the schema, but the multiplication overflows (a Cedar
  // evaluation error) exactly when the content mentions a secret.
  const FORBID =
    '@id("weigh-secrets")\n' +
    'forbid (principal, action == Action::"respond", resource)\n' +
    'when { context.response.content like "*secret*" && context.response.bytes * 4611686018427387904 > 0 };\n';

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = projectWith(FORBID);
    server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
  });
  after(async () => {
    await server.close();
    await endpoint.close();
    removeProject(project);
  });

  it('loads the set and still answers a response the policy evaluates cleanly', async () => {
    const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'Say hello' } });
    assert.equal(result.isError, undefined, textOf(result));
    assert.equal(textOf(result), 'Hello from the synthetic endpoint.');
    const records = readJournal(auditOf(result).audit.path);
    const evaluated = records[8]!.payload.entry.event.PolicyEvaluated as { decision: string; errors: string[] };
    assert.equal(evaluated.decision, 'allow');
    assert.deepEqual(evaluated.errors, []);
  });

  it('denies the response the policy fails on, naming the policy and the error, in the refusal and the journal', async () => {
    const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'tell me [[secret]]' } });
    assert.equal(result.isError, true);
    const text = textOf(result);
    assert.ok(!text.includes('secret you asked for'), 'the answer is withheld');
    assert.match(text, /Cedar policy denied the response: .*weigh-secrets: .*overflow/);
    const ref = auditOf(result);
    const records = readJournal(ref.audit.path);
    assert.deepEqual(eventNames(records), [...ROUTE_SEQUENCES.denied]);
    const evaluated = records[8]!.payload.entry.event.PolicyEvaluated as {
      decision: string;
      errors: string[];
      determining_policies: string[];
      denied_count: number;
      denied_calls: { reason: string }[];
    };
    assert.equal(evaluated.decision, 'deny');
    assert.equal(evaluated.denied_count, 1);
    assert.deepEqual(evaluated.determining_policies, ['policies/mcp-server/forbid.cedar#0']);
    assert.equal(evaluated.errors.length, 1);
    assert.match(evaluated.errors[0]!, /^policies\/mcp-server\/forbid\.cedar#0: .*overflow/);
    // The denial's reason is the denied action's; the run ends as Symbiont's route ends a denied one.
    assert.match(evaluated.denied_calls[0]!.reason, /overflow/);
    assert.equal((records[13]!.payload.entry.event.Terminated as { reason: unknown }).reason, 'MaxIterations');
    assert.equal(inspect(ref.audit.path, ref.audit.run_id, ref.audit.public_key).status, 0);
  });
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { suiteFixture } from '../support/suite-fixture.js';
import { auditOf, providerEnv, textOf } from '../support/server.js';
import { GENERATIONS, startGenerationServer, type GenerationServer, type ListedTool } from '../support/client-generations.js';
import { assertCompleteJournal, journalsIn, projectPublicKey, readJournal } from '../support/journal.js';
import { waitFor } from '../support/wait-for.js';

// The guarantees that matter to a client, proven under both SDK generations of the client: the v1
// client at 2025-11-25 (initialize) and the v2 client at 2026-07-28 (server/discover and the
// per-request envelope). The same server answers both; what the run service does behind
// invoke_agent does not depend on the era the call arrived in.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

function terminalOf(file: string): { reason: unknown } | undefined {
  if (!fs.existsSync(file)) return undefined;
  const records = readJournal(file);
  return records[records.length - 1]?.payload.entry.event?.Terminated as { reason: unknown } | undefined;
}

for (const { generation, revision, label } of GENERATIONS) {
  describe(`invoke_agent and the tools through ${label}`, () => {
    const shared = suiteFixture(FILES);
    let server: GenerationServer;

    before(async () => {
      server = await startGenerationServer(generation, shared.project, { env: providerEnv(shared.endpoint.url), args: ['--max-invocations', '1'] });
    });
    after(async () => {
      shared.endpoint.releaseAll();
      await server.close();
    });

    it(`settles on ${revision} and lists the six tools in their fixed order`, async () => {
      assert.equal(server.revision(), revision);
      const tools = await server.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        ['list_agents', 'get_agent_dsl', 'parse_dsl', 'get_agents_md', 'verify_schema', 'invoke_agent'],
      );
    });

    it('gets a governed answer with its audit reference, and a one-line refusal for an unknown agent', async () => {
      const result = await server.callTool('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      assert.equal(result.isError, undefined, textOf(result));
      const audit = auditOf(result);
      assert.equal(audit.response, 'Hello from the synthetic endpoint.');
      assertCompleteJournal(audit.audit.path, projectPublicKey(shared.project));

      const refused = await server.callTool('invoke_agent', { agent: 'nobody', prompt: 'Say hello' });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /^invoke_agent refused: /);
      assert.ok(!textOf(refused).includes('\n'), 'one line');
      assert.equal(refused.structuredContent, undefined, 'no journal, no audit reference');
    });

    it('answers an unknown tool with the protocol error -32602 naming the tools', async () => {
      const error = await server.callTool('no_such_tool', {}).then(
        () => undefined,
        (err: unknown) => err as { code?: number; message: string },
      );
      assert.ok(error, 'a protocol error, not a tool result');
      assert.equal(error.code, -32602, error.message);
      assert.match(error.message, /unknown tool "no_such_tool"; the tools are get_agent_dsl, get_agents_md, invoke_agent/);
    });

    it('refuses a call beyond --max-invocations at once, and admits the next once the run has ended', async () => {
      const seen = shared.endpoint.requests.length;
      const held = server.callTool('invoke_agent', { agent: 'assistant', prompt: 'hold on [[hold]]' });
      await shared.endpoint.waitForRequests(seen + 1);
      const refused = await server.callTool('invoke_agent', { agent: 'assistant', prompt: 'one more' });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /^invoke_agent refused: the server is at capacity: 1 invocations are already in progress/);
      shared.endpoint.releaseAll();
      assert.equal(auditOf(await held).response, 'Hello from the synthetic endpoint.');
      assert.match(server.stderr(), /at capacity/);
    });

    it('cancels a call in flight with notifications/cancelled: the provider request is closed and the journal ends', async () => {
      const known = new Set(journalsIn(shared.project));
      const seen = shared.endpoint.requests.length;
      const controller = new AbortController();
      const settled = server.callTool('invoke_agent', { agent: 'assistant', prompt: 'wait [[hold]]' }, { signal: controller.signal }).then(
        () => 'resolved',
        () => 'rejected',
      );
      await shared.endpoint.waitForRequests(seen + 1);
      controller.abort('stop');
      assert.equal(await settled, 'rejected', 'a cancelled request gets no result');
      const request = shared.endpoint.requests[seen]!;
      await waitFor('the endpoint to see the connection close', () => (request.closedEarly ? true : undefined));
      const journal = await waitFor('the new journal', () => journalsIn(shared.project).find((file) => !known.has(file)));
      const terminal = await waitFor('the terminal record', () => terminalOf(journal));
      assert.match(JSON.stringify(terminal.reason), /Error.*cancelled/);
      assertCompleteJournal(journal, projectPublicKey(shared.project));
      // The run's place is given back: the next call is admitted.
      const next = await server.callTool('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      assert.equal(next.isError, undefined, textOf(next));
    });
  });
}

// Both eras list the same tools with the same schemas: the era changes the envelope, never what a
// tool takes or returns (test/session/tool-output-schemas.test.ts pins the schemas themselves).
describe('the tool list under both client generations', () => {
  const shared = suiteFixture(FILES);

  it('is the same, input and output schemas included', async () => {
    const listings: ListedTool[][] = [];
    for (const { generation } of GENERATIONS) {
      const server = await startGenerationServer(generation, shared.project);
      try {
        listings.push(await server.listTools());
      } finally {
        await server.close();
      }
    }
    const [legacy, modern] = listings;
    assert.deepEqual(
      modern!.map(({ name, inputSchema, outputSchema }) => ({ name, inputSchema, outputSchema })),
      legacy!.map(({ name, inputSchema, outputSchema }) => ({ name, inputSchema, outputSchema })),
    );
    assert.ok(legacy!.find((tool) => tool.name === 'invoke_agent')?.outputSchema, 'invoke_agent declares its outputSchema');
  });
});

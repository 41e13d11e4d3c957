import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startSyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { providerEnv } from '../support/server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey } from '../support/journal.js';
import { INITIALIZE, INITIALIZED, jsonLine, toolCallLine } from '../support/raw-stdio.js';
import { startInProcessSession } from '../support/in-process-server.js';
import { rawLines } from '../support/op-raw-session.js';

// Capacity counts what the client counts: a call it cancelled is over for it,
// so the run being finished after that cancel (its terminal record still to
// be written) no longer holds one of the --max-invocations places. The session's logic: served
// in process (test/support/op-raw-session.ts), its input written as raw JSON-RPC lines.

const CAPACITY = 8;
const ROUNDS = 64;

describe('capacity and cancelled calls', () => {
  it('never refuses a client that keeps exactly --max-invocations un-cancelled calls in flight, cancelling and replacing them', async () => {
    const endpoint = await startSyntheticEndpoint();
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' });
    const server = rawLines(await startInProcessSession(project, { maxInvocations: CAPACITY, env: providerEnv(endpoint.url) }));
    const call = (id: number): string => toolCallLine(id, 'invoke_agent', { agent: 'assistant', prompt: `call ${id} [[hold]]` });
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init');
      await server.send(jsonLine(INITIALIZED));
      const inFlight: number[] = [];
      let nextId = 1;
      let lines = '';
      for (; nextId <= CAPACITY; nextId++) {
        lines += call(nextId);
        inFlight.push(nextId);
      }
      await server.send(lines);
      await endpoint.waitForRequests(CAPACITY, 30_000);
      for (let round = 0; round < ROUNDS; round++) {
        // The oldest call is cancelled and replaced in the same write: the server reads the cancel first.
        const cancelled = inFlight.shift()!;
        const seen = endpoint.requests.length;
        await server.send(jsonLine({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: cancelled, reason: 'replaced' } }) + call(nextId));
        inFlight.push(nextId);
        nextId += 1;
        // Each replacement reaches the provider: it was admitted, and the cancelled run is being finished meanwhile.
        await endpoint.waitForRequests(seen + 1, 5_000).catch(() => undefined);
        const answered = server.messages().filter((m) => 'id' in m && m.id !== 'init');
        assert.deepEqual(answered, [], `round ${round}: no call is answered while every call in flight holds`);
      }
      endpoint.releaseAll();
      for (const id of inFlight) {
        const answer = (await server.waitFor(id, 30_000)) as { result?: { isError?: boolean; content: Array<{ text: string }> } };
        assert.equal(answer.result?.isError, undefined, `call ${id}: ${JSON.stringify(answer)}`);
      }
      assert.doesNotMatch(server.stderr(), /at capacity/);
      assert.equal(await server.end(), 0, server.stderr());
      const key = projectPublicKey(project);
      const journals = journalsIn(project);
      assert.equal(journals.length, CAPACITY + ROUNDS, 'one journal per call, cancelled or answered');
      for (const file of journals) assertCompleteJournal(file, key);
    } finally {
      endpoint.releaseAll();
      await server.end().catch(() => undefined);
      await endpoint.close();
      removeProject(project);
    }
  });
});

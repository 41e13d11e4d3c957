import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DSL_ANALYSIS_QUEUE_MAX } from '../../src/shared/limits.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer, type RawMessage, toolCallLine } from '../support/raw-stdio.js';
import { makeProject, removeProject } from '../support/project.js';
import { providerEnv } from '../support/server.js';
import { startSyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { waitFor } from '../support/wait-for.js';

// The server's own analyses (the startup analysis of the agent sources, and
// invoke_agent's selection of an agent's definition) go ahead of callers'
// parse_dsl texts in the DSL analysis thread, and callers' waiting texts are
// bounded. Through the real server over stdio; the order of events is
// asserted, never their duration.

const WAIT_MS = 120_000;
// Each text keeps the analysis thread busy for a while (no figure is asserted) and has a short
// report, so answers do not queue up in the pipe behind large ones.
const UNIT = 'metadata { version = "1.0" }\n';
const LARGE_TEXT = UNIT.repeat(Math.floor((512 * 1024) / UNIT.length));

type CallResult = { isError?: boolean; content: { type: string; text: string }[] };

function resultOf(message: RawMessage): CallResult {
  assert.ok('result' in message, `a JSON-RPC error: ${JSON.stringify(message).slice(0, 300)}`);
  return message.result as CallResult;
}

describe('the DSL analysis thread’s queue', { timeout: 300_000 }, () => {
  it('selects an agent for invoke_agent ahead of the parse_dsl texts waiting before it, and refuses a text past the bound at once', async () => {
    const endpoint = await startSyntheticEndpoint();
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' }, 'symbi-guard-priority-');
    const server = spawnRawServer(project, { env: providerEnv(endpoint.url) });
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init', WAIT_MS);
      // One text for the thread to run, as many as may wait, and one past the bound; then the end of
      // the handshake (the startup analysis is asked for now, behind the texts) and an invoke_agent
      // of an agent not selected yet, its provider request held at the endpoint.
      const accepted = Array.from({ length: DSL_ANALYSIS_QUEUE_MAX + 1 }, (_, i) => `text${i}`);
      let batch = '';
      for (const id of [...accepted, 'over']) batch += toolCallLine(id, 'parse_dsl', { content: LARGE_TEXT });
      batch += jsonLine(INITIALIZED) + toolCallLine('invoke', 'invoke_agent', { agent: 'assistant', prompt: 'hello [[hold]]' });
      await server.send(batch);

      // The bound falls on the last text, or on the one before it when the thread had not yet taken
      // the first off the queue as the batch arrived (on a loaded machine it had not): only the last
      // two texts may be refused, and every other one is analysed.
      const busy = `parse_dsl: <inline>: busy: ${DSL_ANALYSIS_QUEUE_MAX} texts are already waiting for analysis; send this one again once they are answered`;
      const sent = [...accepted, 'over'];
      const refusedId = await waitFor(
        'a text refused as busy',
        () =>
          server.messages().find((m) => sent.includes(m.id as string) && (m.result as CallResult | undefined)?.content[0]?.text === busy)?.id as
            | string
            | undefined,
        WAIT_MS,
      );
      assert.ok(sent.slice(-2).includes(refusedId), `${refusedId} was refused, not one of the last two texts`);
      assert.equal(resultOf(server.messages().find((m) => m.id === refusedId)!).isError, true);
      const queued = sent.filter((id) => id !== refusedId);
      // At once: not behind the waiting texts. The thread may finish a text or two while the server
      // still reads the batch's large lines, never the queue.
      const answeredFirst = queued.filter((id) => server.messages().some((m) => m.id === id));
      assert.ok(answeredFirst.length < queued.length / 2, `the text past the bound was answered after ${answeredFirst.join(', ')}`);

      // The run starts once the agent is selected. Had the selection (or the startup analysis before
      // it) waited its turn, every text would have been answered by then.
      await waitFor('the run to start', () => (server.stderr().includes('run started') ? true : undefined), WAIT_MS);
      const answeredBefore = queued.filter((id) => server.messages().some((m) => m.id === id));
      assert.ok(answeredBefore.length < queued.length / 2, `${answeredBefore.length} of ${queued.length} texts were answered before the agent was selected`);

      await endpoint.waitForRequests(1, WAIT_MS);
      endpoint.releaseAll();
      const invoke = resultOf(await server.waitFor('invoke', WAIT_MS));
      assert.equal(invoke.isError, undefined, JSON.stringify(invoke));
      const analysed: string[] = [];
      for (const id of queued) {
        const text = resultOf(await server.waitFor(id, WAIT_MS));
        // The last text too, when the one before it already found the queue full.
        if (id === 'over' && text.content[0]?.text === busy) continue;
        assert.equal(text.isError, undefined, `${id}: ${text.content[0]?.text.slice(0, 200)}`);
        analysed.push(id);
      }
      const order = server.messages().map((m) => m.id);
      assert.ok(order.indexOf('invoke') < order.indexOf(analysed.at(-1)), `invoke_agent was answered after every text: ${JSON.stringify(order)}`);
      assert.equal(await server.end(), 0);
    } finally {
      server.kill('SIGKILL');
      endpoint.releaseAll();
      await endpoint.close();
      removeProject(project);
    }
  });
});

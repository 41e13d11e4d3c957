import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { traceContextOf } from '../../src/supervisor/runs/trace-context.js';
import { suiteFixture } from '../support/suite-fixture.js';
import { providerEnv, startServer, textOf } from '../support/server.js';
import { parseOperatorLines } from '../support/operator-lines.js';
import { waitFor } from '../support/wait-for.js';

// A W3C trace context in a tools/call request's `_meta` (issue 57, item 4) reaches that run's
// run.started and run.ended events, so an operator can join a client's trace to a governed run;
// a value outside the W3C grammar is caller text and reaches nothing.

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const STATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';

describe('trace context from _meta', () => {
  it('keeps a well-formed traceparent and tracestate, and nothing else', () => {
    assert.deepEqual(traceContextOf({ traceparent: PARENT, tracestate: STATE }), { traceparent: PARENT, tracestate: STATE });
    assert.deepEqual(traceContextOf({ traceparent: PARENT }), { traceparent: PARENT });
    assert.deepEqual(traceContextOf({ traceparent: PARENT, tracestate: 'vendor@sys=x' }), { traceparent: PARENT, tracestate: 'vendor@sys=x' });
    assert.deepEqual(traceContextOf(undefined), {});
    assert.deepEqual(traceContextOf({ tracestate: STATE }), {}, 'a tracestate alone means nothing');
    for (const bad of [
      PARENT.toUpperCase(),
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      `${PARENT} ignore previous instructions`,
      42,
    ])
      assert.deepEqual(traceContextOf({ traceparent: bad }), {}, String(bad));
    for (const bad of ['Prompt text here', 'a=b\nc=d', 'k=' + 'v'.repeat(300), Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','), 'k=v,=x'])
      assert.deepEqual(traceContextOf({ traceparent: PARENT, tracestate: bad }), { traceparent: PARENT }, JSON.stringify(bad));
  });

  describe('through a real server', () => {
    const shared = suiteFixture({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });

    it('names the trace in run.started and run.ended; a malformed one reaches no line', async () => {
      const server = await startServer(shared.project, { env: providerEnv(shared.endpoint.url), args: ['--log-format', 'json'] });
      try {
        const traced = await server.client.callTool({
          name: 'invoke_agent',
          arguments: { agent: 'assistant', prompt: 'hi' },
          _meta: { traceparent: PARENT, tracestate: STATE },
        });
        assert.equal(traced.isError, undefined, textOf(traced));
        const smuggled = 'SMUGGLED-CALLER-TEXT';
        const untraced = await server.client.callTool({
          name: 'invoke_agent',
          arguments: { agent: 'assistant', prompt: 'hi' },
          _meta: { traceparent: `00-${smuggled}`, tracestate: smuggled },
        });
        assert.equal(untraced.isError, undefined, textOf(untraced));
        const runLines = await waitFor('both runs ended on stderr', () => {
          const lines = parseOperatorLines(server.stderr(), 'json').filter((l) => l.event === 'run.started' || l.event === 'run.ended');
          return lines.length === 4 ? lines : undefined;
        });
        const [firstStarted, firstEnded] = [runLines.filter((l) => l.event === 'run.started')[0]!, runLines.filter((l) => l.event === 'run.ended')[0]!];
        for (const line of [firstStarted, firstEnded]) {
          assert.equal(line.fields.traceparent, PARENT, line.event);
          assert.equal(line.fields.tracestate, STATE, line.event);
        }
        for (const line of runLines.slice(2)) assert.equal(line.fields.traceparent, undefined);
        assert.ok(!server.stderr().includes(smuggled), 'caller text outside the grammar reaches no line');
      } finally {
        await server.close();
      }
    });
  });
});

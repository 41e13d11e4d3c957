import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { pino as PinoFactory } from 'pino';
import { suiteFixture } from '../support/suite-fixture.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { providerEnv, startServer, textOf } from '../support/server.js';
import { parseOperatorLines, type OperatorLine } from '../support/operator-lines.js';
import { waitFor } from '../support/wait-for.js';

// The run line an operator acts on (issue 48, item 3): a 429 not retried says why, a provider
// failure is an error, a run the shutdown stopped says so at `warn`, and the JSON levels are pino's
// numbers, so pino's level filter (what `pino-pretty --minimumLevel warn` applies) keeps exactly the
// warnings and errors. The operator log is the session's logic: served in process
// (test/support/in-process-server.ts, the same lines `symbi mcp` writes), except the shutdown a
// SIGTERM starts, which needs a real server process.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

const pino = createRequire(import.meta.url)('pino') as typeof PinoFactory;

function runEnded(stderr: string, format: 'text' | 'json'): OperatorLine[] {
  return parseOperatorLines(stderr, format).filter((l) => l.event === 'run.ended');
}

describe("the operator's run line", () => {
  const shared = suiteFixture(FILES);
  // One session per log format serves the runs of several tests: each test reads the lines
  // written after its own call (the run.ended of its run), so the runs need no session each.
  const sessions = new Map<'text' | 'json', Promise<InProcessServer>>();
  const session = (format: 'text' | 'json'): Promise<InProcessServer> => {
    if (!sessions.has(format)) sessions.set(format, startInProcessServer(shared.project, { env: providerEnv(shared.endpoint.url), logFormat: format }));
    return sessions.get(format)!;
  };
  after(async () => {
    for (const server of sessions.values()) await (await server).close();
  });

  /** Invokes `prompt` on the session of `format`; resolves with the result and the log lines written from the call to its run's run.ended. */
  async function runOn(format: 'text' | 'json', prompt: string): Promise<{ result: CallToolResult; log: string }> {
    const server = await session(format);
    const from = server.stderr().length;
    const result = await server.call('invoke_agent', { agent: 'assistant', prompt });
    const log = await waitFor('the run.ended line', () => {
      const since = server.stderr().slice(from);
      return runEnded(since, format).length > 0 ? since : undefined;
    });
    return { result, log };
  }

  it('a 429 whose Retry-After is longer than the time left is not retried, and run.ended says why, at error', async () => {
    // The response deadline is 120 s: a provider asking for 600 s is not waited for.
    const { result, log } = await runOn('text', 'busy [[http:code=429,retry_after=600]]');
    assert.equal(result.isError, true, textOf(result));
    const [ended] = runEnded(log, 'text');
    assert.ok(ended, log);
    assert.equal(ended.level, 'error');
    assert.equal(ended.fields.reason, 'provider_http_429');
    assert.equal(ended.fields.attempts, '1');
    assert.match(String(ended.fields.not_retried), /^the provider asked to wait 600 s before retrying, more than the [\d.]+ s left before the deadline$/);
    assert.ok(!parseOperatorLines(log, 'text').some((l) => l.event === 'provider.retry'), 'no retry was announced');
  });

  it('a 429 on every attempt: the retries spent are the reason given, after 3 attempts', async () => {
    const { result, log } = await runOn('json', 'always busy [[http:code=429]]');
    assert.equal(result.isError, true, textOf(result));
    const [ended] = runEnded(log, 'json');
    assert.ok(ended, log);
    assert.equal(ended.level, 'error');
    assert.equal(ended.fields.reason, 'provider_http_429');
    assert.equal(ended.fields.attempts, 3);
    assert.equal(ended.fields.not_retried, 'the 2 retries allowed were made');
  });

  it('a failure that is never retried (HTTP 400) gives no not_retried field', async () => {
    const { result, log } = await runOn('text', 'bad [[http:code=400]]');
    assert.equal(result.isError, true);
    const [ended] = runEnded(log, 'text');
    assert.ok(ended, log);
    assert.equal(ended.level, 'error');
    assert.equal(ended.fields.not_retried, undefined);
  });

  it("a run the server's shutdown stopped: cancelled by shutdown, run.ended at warn", async () => {
    const server = await startServer(shared.project, { env: providerEnv(shared.endpoint.url), args: ['--shutdown-grace-ms', '5000'] });
    try {
      const held = shared.endpoint.requests.length;
      const call = server.call('invoke_agent', { agent: 'assistant', prompt: 'wait [[hold]]' }).catch((err: unknown) => err);
      await waitFor('the held request', () => (shared.endpoint.requests.length > held ? true : undefined), 10_000);
      process.kill(server.pid(), 'SIGTERM');
      await call;
      await waitFor('the run to end', () => (runEnded(server.stderr(), 'text').length > 0 ? true : undefined), 10_000);
      const lines = parseOperatorLines(server.stderr(), 'text');
      const cancelled = lines.find((l) => l.event === 'run.cancelled');
      assert.ok(cancelled, server.stderr());
      assert.equal(cancelled.fields.by, 'shutdown');
      assert.match(cancelled.text, /^run cancelled by the server's shutdown /);
      const [ended] = runEnded(server.stderr(), 'text');
      assert.equal(ended!.level, 'warn');
      assert.equal(ended!.fields.reason, 'cancelled');
      assert.equal(ended!.fields.cancelled_by, 'shutdown');
      assert.equal(ended!.fields.attempts, '1');
    } finally {
      shared.endpoint.releaseAll();
      await server.close();
    }
  });

  it("JSON levels are pino's numbers: pino's own level filter at warn keeps exactly the warnings and errors", async () => {
    // The JSON session's last test: the earlier run on it ended before this test's first call.
    const server = await session('json');
    // Served in this process: its log lines carry this process's id.
    const pid = process.pid;
    try {
      const from = server.stderr().length;
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' })).isError, undefined);
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'use a tool [[tool-call]]' })).isError, true);
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'bad [[http:code=400]]' })).isError, true);
      await server.close();
      const parse = (text: string) =>
        text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as { level: unknown; event: string; pid: unknown; hostname: unknown });
      // Every line the session wrote, from its startup to its shutdown.
      const objects = parse(server.stderr());
      // The lines of this test's three runs, and the shutdown's.
      const ours = parse(server.stderr().slice(from));
      assert.ok(objects.length > 5);
      for (const o of objects) {
        assert.equal(typeof o.level, 'number', JSON.stringify(o));
        assert.ok(pino.levels.labels[o.level as number] !== undefined, `a pino level: ${String(o.level)}`);
        assert.equal(o.pid, pid);
      }
      // What a level filter at warn (pino's own threshold) lets through, against what the text names say.
      const kept = objects.filter((o) => (o.level as number) >= pino.levels.values.warn!);
      const labels = kept.map((o) => pino.levels.labels[o.level as number]);
      assert.ok(
        labels.every((label) => label === 'warn' || label === 'error'),
        labels.join(),
      );
      assert.deepEqual(
        ours.filter((o) => (o.level as number) >= pino.levels.values.warn! && o.event === 'run.ended').map((o) => pino.levels.labels[o.level as number]),
        ['warn', 'error'],
        'the completed run is filtered out; the withheld tool call and the provider failure stay',
      );
    } finally {
      await server.close();
    }
  });
});

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { pino as PinoFactory } from 'pino';
import { suiteFixture } from '../support/suite-fixture.js';
import { startInProcessServer } from '../support/in-process-server.js';
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

  it('a 429 whose Retry-After is longer than the time left is not retried, and run.ended says why, at error', async () => {
    const server = await startInProcessServer(shared.project, { env: providerEnv(shared.endpoint.url) });
    try {
      // The response deadline is 120 s: a provider asking for 600 s is not waited for.
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'busy [[http:code=429,retry_after=600]]' });
      assert.equal(result.isError, true, textOf(result));
      await server.close();
      const [ended] = runEnded(server.stderr(), 'text');
      assert.ok(ended, server.stderr());
      assert.equal(ended.level, 'error');
      assert.equal(ended.fields.reason, 'provider_http_429');
      assert.equal(ended.fields.attempts, '1');
      assert.match(String(ended.fields.not_retried), /^the provider asked to wait 600 s before retrying, more than the [\d.]+ s left before the deadline$/);
      assert.ok(!parseOperatorLines(server.stderr(), 'text').some((l) => l.event === 'provider.retry'), 'no retry was announced');
    } finally {
      await server.close();
    }
  });

  it('a 429 on every attempt: the retries spent are the reason given, after 3 attempts', async () => {
    const server = await startInProcessServer(shared.project, { env: providerEnv(shared.endpoint.url), logFormat: 'json' });
    try {
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'always busy [[http:code=429]]' });
      assert.equal(result.isError, true, textOf(result));
      await server.close();
      const [ended] = runEnded(server.stderr(), 'json');
      assert.ok(ended, server.stderr());
      assert.equal(ended.level, 'error');
      assert.equal(ended.fields.reason, 'provider_http_429');
      assert.equal(ended.fields.attempts, 3);
      assert.equal(ended.fields.not_retried, 'the 2 retries allowed were made');
    } finally {
      await server.close();
    }
  });

  it('a failure that is never retried (HTTP 400) gives no not_retried field', async () => {
    const server = await startInProcessServer(shared.project, { env: providerEnv(shared.endpoint.url) });
    try {
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'bad [[http:code=400]]' })).isError, true);
      await server.close();
      const [ended] = runEnded(server.stderr(), 'text');
      assert.ok(ended, server.stderr());
      assert.equal(ended.level, 'error');
      assert.equal(ended.fields.not_retried, undefined);
    } finally {
      await server.close();
    }
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
    const server = await startInProcessServer(shared.project, { env: providerEnv(shared.endpoint.url), logFormat: 'json' });
    // Served in this process: its log lines carry this process's id.
    const pid = process.pid;
    try {
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' })).isError, undefined);
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'use a tool [[tool-call]]' })).isError, true);
      assert.equal((await server.call('invoke_agent', { agent: 'assistant', prompt: 'bad [[http:code=400]]' })).isError, true);
      await server.close();
      const objects = server
        .stderr()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { level: unknown; event: string; pid: unknown; hostname: unknown });
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
        kept.filter((o) => o.event === 'run.ended').map((o) => pino.levels.labels[o.level as number]),
        ['warn', 'error'],
        'the completed run is filtered out; the withheld tool call and the provider failure stay',
      );
    } finally {
      await server.close();
    }
  });
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { suiteFixture } from './support/suite-fixture.js';
import { auditOf, providerEnv, startServer, textOf, waitForStderr, type RunningServer } from './support/server.js';
import { readJournal } from './support/journal.js';

// The server's secrets never leave it (issue 31, item 4): the configured provider key reaches
// neither standard error (however a provider error or a library split, escaped or re-cased it)
// nor the MCP caller (an answer that echoes it is withheld, and its journal says why without it).

// Not shaped like an sk-... key, so only the configured-key rule can catch it.
const KEY = 'Synthetic0Key1For2Redaction3Tests4xyz';

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
};

/** Every trace of KEY in `text`: the key whole once separators and escapes are taken out, or either half of it. */
function keyTraces(text: string): string[] {
  const lower = text.toLowerCase();
  const flat = lower.replace(/\\+u[0-9a-f]{4}|\\+[nrt]|\\+|\s/g, '');
  const key = KEY.toLowerCase();
  const half = Math.floor(key.length / 2);
  const traces: string[] = [];
  if (flat.includes(key)) traces.push('the whole key');
  if (lower.includes(key.slice(0, half))) traces.push('its first half');
  if (lower.includes(key.slice(half))) traces.push('its second half');
  return traces;
}

function env(url: string, extra: Record<string, string> = {}): Record<string, string> {
  return providerEnv(url, { OPENAI_API_KEY: KEY, ...extra });
}

describe('the provider key never leaves the server', () => {
  const shared = suiteFixture(FILES);

  for (const format of ['text', 'json']) {
    it(`keeps a key a provider error split by a newline off standard error (--log-format ${format})`, async () => {
      const server = await startServer(shared.project, { env: env(shared.endpoint.url), args: ['--log-format', format] });
      try {
        const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'who am I [[key-error]]' });
        assert.equal(result.isError, true);
        assert.deepEqual(keyTraces(JSON.stringify(result)), []);
        const stderr = await waitForStderr(server, (s) => s.includes('[redacted]'));
        assert.ok(stderr.includes('[redacted]'), `the provider's words are said, redacted:\n${stderr}`);
        assert.deepEqual(keyTraces(stderr), [], stderr);
      } finally {
        await server.close();
      }
    });
  }

  for (const [label, prompt] of [
    ['verbatim', 'show me [[echo-auth]]'],
    ['split by a newline and in other case around it', 'show me [[echo-auth:split]]'],
  ] as const) {
    it(`withholds an answer that echoes the Authorization header (${label}) and journals why, without the key`, async () => {
      const server = await startServer(shared.project, { env: env(shared.endpoint.url) });
      try {
        const result = await server.call('invoke_agent', { agent: 'assistant', prompt });
        assert.equal(result.isError, true, textOf(result));
        assert.match(textOf(result), /withheld/);
        assert.match(textOf(result), /provider key/);
        assert.deepEqual(keyTraces(JSON.stringify(result)), []);
        const journal = auditOf(result).audit.path;
        assert.deepEqual(keyTraces(fs.readFileSync(journal, 'utf8')), []);
        const records = readJournal(journal);
        const terminal = records[records.length - 1]!.payload.entry.event.Terminated as { reason: { Error?: { message: string } } };
        assert.match(terminal.reason.Error?.message ?? '', /provider key/);
        await server.close();
        assert.deepEqual(keyTraces(server.stderr()), [], server.stderr());
      } finally {
        await server.close();
      }
    });
  }

  it('keeps a key a worker thread prints on its standard error (split, JSON-escaped) off it, said as events', async () => {
    const server: RunningServer = await startServer(shared.project, { env: env(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-stderr-key' }) });
    try {
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'print [[fault:worker-stderr-key]]' });
      assert.equal(result.isError, undefined, textOf(result));
      const stderr = await waitForStderr(server, (s) => s.includes('json-escaped key') && s.includes('edge-split end'));
      assert.match(stderr, /edge-split key \[redacted\]/, stderr);
      assert.match(stderr, /stderr\.other: .*json-escaped key/, stderr);
      assert.deepEqual(keyTraces(stderr), [], stderr);
    } finally {
      await server.close();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { providerEnv, waitForStderr } from '../support/server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey } from '../support/journal.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer, type RawMessage } from '../support/raw-stdio.js';
import { startInProcessSession } from '../support/in-process-server.js';
import { rawLines, type RawInProcessSession } from '../support/op-raw-session.js';
import { CACHE_HINTS, LIST_TTL_MS } from '../../src/supervisor/session/mcp-session.js';
import { MODERN_REVISIONS } from '../../src/supervisor/session/incoming-message-check.js';
import { STDIN_LINE_MAX_BYTES } from '../../src/shared/limits.js';

// MCP 2026-07-28 in raw lines, as Claude Code 2.1.332 speaks it: `server/discover` first, then every
// request with the per-request `_meta` envelope and no `initialize` (the specification's
// basic/versioning.mdx, server/discover.mdx, basic/transports/stdio.mdx). The discovery result, the
// result type and the cache hints on the lists, the version refusals (-32022), a governed
// invoke_agent answer with its audit reference, and exactly one answer for a request read when
// standard input ends.
//
// What the session answers to those lines is its logic: served in this process (in-process-server.ts)
// on raw lines, through the same line limiter, message gate and request ledger as `symbi mcp`, its
// operator log kept in memory, and for standard input ending the exit code its shutdown steps give.
// SIGTERM needs a process of its own.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n', 'AGENTS.md': '# Guidance\n' };
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
const ENVELOPE = { [VERSION_KEY]: '2026-07-28', [CAPABILITIES_KEY]: {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' } };

type Answer = RawMessage & { result?: Record<string, unknown>; error?: { code: number; message: string; data?: Record<string, unknown> } };

const request = (id: number | string, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = ENVELOPE): string =>
  jsonLine({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });

async function ask(
  server: Pick<RawInProcessSession, 'send' | 'waitFor'>,
  id: number | string,
  method: string,
  params?: Record<string, unknown>,
  meta?: Record<string, unknown>,
): Promise<Answer> {
  await server.send(request(id, method, params, meta));
  return await server.waitFor(id, 30_000);
}

function oneLineError(answer: Answer, code: number, what: string): { message: string; data?: Record<string, unknown> } {
  assert.ok(answer.error, `${what}: an error, got ${JSON.stringify(answer)}`);
  assert.equal(answer.error.code, code, `${what}: ${answer.error.message}`);
  assert.ok(!answer.error.message.includes('\n'), `${what}: one line`);
  return answer.error;
}

describe('MCP 2026-07-28 in raw lines', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: RawInProcessSession;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(FILES);
    server = rawLines(await startInProcessSession(project, { env: providerEnv(endpoint.url) }));
  });
  after(async () => {
    endpoint.releaseAll();
    await server.end();
    await endpoint.close();
    removeProject(project);
  });

  it('answers the server/discover probe with its versions, capabilities, identity and cache hints', async () => {
    const answer = await ask(server, 'discover', 'server/discover');
    const result = answer.result as {
      resultType: string;
      supportedVersions: string[];
      capabilities: Record<string, unknown>;
      instructions: string;
      _meta: Record<string, { name: string; version: string }>;
      ttlMs: number;
      cacheScope: string;
    };
    assert.equal(result.resultType, 'complete');
    assert.deepEqual(result.supportedVersions, [...MODERN_REVISIONS], 'the gate and the SDK name the same revisions');
    assert.deepEqual(Object.keys(result.capabilities).sort(), ['resources', 'tools']);
    assert.equal((result.capabilities.tools as { listChanged?: boolean }).listChanged, false, 'the tool list never changes while the process lives');
    assert.equal(result._meta['io.modelcontextprotocol/serverInfo']?.name, 'symbi-mcp');
    assert.match(result.instructions, /Governed Symbiont server/);
    assert.equal(result.ttlMs, LIST_TTL_MS);
    assert.equal(result.cacheScope, 'public');
  });

  it('lists the tools with resultType and the startup snapshot cache hints, in the same order every time', async () => {
    const first = (await ask(server, 'tools-1', 'tools/list')).result as { resultType: string; ttlMs: number; cacheScope: string; tools: { name: string }[] };
    const second = (await ask(server, 'tools-2', 'tools/list')).result as typeof first;
    assert.equal(first.resultType, 'complete');
    assert.equal(first.ttlMs, CACHE_HINTS['tools/list'].ttlMs);
    assert.equal(first.cacheScope, 'public');
    const names = first.tools.map((tool) => tool.name);
    assert.deepEqual(names, ['list_agents', 'get_agent_dsl', 'parse_dsl', 'get_agents_md', 'verify_schema', 'invoke_agent']);
    assert.deepEqual(
      second.tools.map((tool) => tool.name),
      names,
    );
    const resources = (await ask(server, 'resources', 'resources/list')).result as {
      resultType: string;
      ttlMs: number;
      cacheScope: string;
      resources: unknown[];
    };
    assert.deepEqual([resources.resultType, resources.ttlMs, resources.cacheScope], ['complete', LIST_TTL_MS, 'private']);
    assert.equal(resources.resources.length, 1);
    // AGENTS.md is read now: never fresh for longer than this answer.
    const read = (await ask(server, 'read', 'resources/read', { uri: 'file:///AGENTS.md' })).result as {
      resultType: string;
      ttlMs: number;
      cacheScope: string;
    };
    assert.deepEqual([read.resultType, read.ttlMs, read.cacheScope], ['complete', 0, 'private']);
  });

  it('refuses a version it does not serve, and an envelope without a version, with -32022 naming 2026-07-28', async () => {
    const unsupported = oneLineError(await ask(server, 'v-1', 'tools/list', {}, { ...ENVELOPE, [VERSION_KEY]: '2099-01-01' }), -32022, 'a future version');
    assert.deepEqual(unsupported.data, { supported: ['2026-07-28'], requested: '2099-01-01' });
    const legacyInEnvelope = oneLineError(await ask(server, 'v-2', 'tools/list', {}, { ...ENVELOPE, [VERSION_KEY]: '2025-11-25' }), -32022, 'a 2025 version');
    assert.deepEqual(legacyInEnvelope.data, { supported: ['2026-07-28'], requested: '2025-11-25' });
    const missing = oneLineError(await ask(server, 'v-3', 'tools/list', {}, { [CAPABILITIES_KEY]: {} }), -32022, 'no version');
    assert.match(missing.message, /has no "io\.modelcontextprotocol\/protocolVersion"/);
    assert.deepEqual(missing.data, { supported: ['2026-07-28'] });
    // The operator hears what was wrong, never the client's bytes.
    const logged = await waitForStderr(server, (text) => (text.match(/answered -32022/g) ?? []).length >= 3);
    assert.match(logged, /answered -32022: a protocol version of 10 characters it does not serve/);
    assert.ok(!logged.includes('2099-01-01'), 'the requested version is not logged');
  });

  it('answers what 2026-07-28 removed, and a request without the envelope, with exactly one error each', async () => {
    // ping and initialize are 2025-era; the connection is in the 2026-07-28 era now.
    oneLineError(await ask(server, 'ping', 'ping'), -32601, 'ping');
    const initialize = { ...INITIALIZE, id: 'late-init' };
    await server.send(jsonLine(initialize));
    oneLineError(await server.waitFor('late-init'), -32022, 'initialize on a 2026-07-28 connection');
    oneLineError(await ask(server, 'set-level', 'logging/setLevel', { level: 'debug' }), -32601, 'logging/setLevel');
    await server.send(jsonLine({ jsonrpc: '2.0', id: 'bare', method: 'tools/list' }));
    const bare = oneLineError(await server.waitFor('bare'), -32602, 'a request without the envelope');
    assert.match(bare.message, /_meta envelope/);
    for (const id of ['ping', 'late-init', 'set-level', 'bare']) assert.equal(server.messages().filter((m) => m.id === id).length, 1, `${id}: one answer`);
  });

  it('serves a client that declares no capabilities (no method here needs one, so -32021 never applies) and sends no log it did not ask for', async () => {
    const seen = endpoint.requests.length;
    const answer = await ask(
      server,
      'invoke',
      'tools/call',
      { name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'Say hello' } },
      {
        ...ENVELOPE,
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    );
    const result = answer.result as {
      resultType: string;
      isError?: boolean;
      content: { text: string }[];
      structuredContent: { audit: { path: string }; response: string };
    };
    assert.equal(result.resultType, 'complete');
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.equal(result.structuredContent.response, 'Hello from the synthetic endpoint.');
    assert.equal(endpoint.requests.length, seen + 1);
    assertCompleteJournal(result.structuredContent.audit.path, projectPublicKey(project));
    assert.match(server.stderr(), /run\.started.*4bf92f3577b34da6a3ce929d0e0e4736|traceparent.*4bf92f3577b34da6a3ce929d0e0e4736/);
    // The logging capability is not declared and nothing asked for logs: no notifications/message.
    await ask(server, 'after-log', 'tools/list', {}, { ...ENVELOPE, 'io.modelcontextprotocol/logLevel': 'debug' });
    assert.equal(server.messages().filter((m) => m.method === 'notifications/message').length, 0);
  });
});

describe('MCP 2026-07-28: the session ending, the line limit, the fallback', () => {
  it('gets exactly one answer, its run its terminal record, and the shutdown steps give exit 0 (session in process)', async () => {
    const endpoint = await startSyntheticEndpoint();
    const project = makeProject(FILES);
    const server = rawLines(await startInProcessSession(project, { env: providerEnv(endpoint.url) }));
    try {
      await server.send(request('discover', 'server/discover'));
      await server.waitFor('discover');
      await server.send(request(7, 'tools/call', { name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'wait [[hold]]' } }));
      await endpoint.waitForRequests(1, 30_000);
      const exited = server.end();
      // The run is still held by the provider: shutdown cancels it and answers the call.
      const answer = (await server.waitFor(7, 30_000)) as Answer;
      assert.ok(answer.result ?? answer.error, JSON.stringify(answer));
      assert.equal(await exited, 0, server.stderr());
      assert.equal(server.messages().filter((m) => m.id === 7).length, 1, 'exactly one answer');
      const journals = journalsIn(project);
      assert.equal(journals.length, 1);
      assertCompleteJournal(journals[0]!, projectPublicKey(project));
    } finally {
      endpoint.releaseAll();
      await server.end().catch(() => undefined);
      await endpoint.close();
      removeProject(project);
    }
  });

  it('answers a call in flight on SIGTERM exactly once, and ends its journal', async () => {
    const endpoint = await startSyntheticEndpoint();
    const project = makeProject(FILES);
    const server = spawnRawServer(project, { env: providerEnv(endpoint.url) });
    try {
      await server.send(request(7, 'tools/call', { name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'wait [[hold]]' } }));
      await endpoint.waitForRequests(1, 30_000);
      server.kill('SIGTERM');
      const answer = (await server.waitFor(7, 30_000)) as Answer;
      assert.equal((answer.result as { isError?: boolean } | undefined)?.isError, true, JSON.stringify(answer));
      assert.equal(await server.exited, 0, server.stderr());
      assert.equal(server.messages().filter((m) => m.id === 7).length, 1, 'exactly one answer');
      assertCompleteJournal(journalsIn(project)[0]!, projectPublicKey(project));
    } finally {
      endpoint.releaseAll();
      await server.end().catch(() => undefined);
      await endpoint.close();
      removeProject(project);
    }
  });

  it('keeps its own 8 MiB line limit in front of the SDK (whose stdio buffer would take 10 MB)', async () => {
    const project = makeProject(FILES);
    const server = rawLines(await startInProcessSession(project));
    try {
      assert.equal(STDIN_LINE_MAX_BYTES, 8 * 1024 * 1024);
      // 9 MiB: over this server's limit, under the SDK's default buffer of 10 * 1024 * 1024 bytes.
      const padding = 'x'.repeat(9 * 1024 * 1024);
      await server.send(request('big', 'tools/list', {}, { ...ENVELOPE, padding }));
      await server.send(request('after', 'tools/list'));
      const after = (await server.waitFor('after', 30_000)) as Answer;
      assert.equal(after.result?.resultType, 'complete', 'the session goes on');
      const refused = server.messages().filter((m) => m.id === null) as Answer[];
      assert.equal(refused.length, 1, JSON.stringify(refused));
      assert.equal(refused[0]!.error?.code, -32600);
      assert.match(refused[0]!.error.message, /one line is limited to 8388608 bytes/);
      assert.equal(server.messages().filter((m) => m.id === 'big').length, 0, 'the dropped line never reached the SDK');
    } finally {
      await server.end();
      removeProject(project);
    }
  });

  it('falls back to initialize after a probe, as a 2025-era client does, and keeps 2025-11-25', async () => {
    const project = makeProject(FILES);
    const server = rawLines(await startInProcessSession(project));
    try {
      await server.send(request('discover', 'server/discover'));
      assert.equal(((await server.waitFor('discover')) as Answer).result?.resultType, 'complete');
      await server.send(jsonLine({ ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: '2025-11-25' } }));
      const init = (await server.waitFor('init')) as { result: { protocolVersion: string; capabilities: Record<string, unknown> } };
      assert.equal(init.result.protocolVersion, '2025-11-25');
      await server.send(jsonLine(INITIALIZED) + jsonLine({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
      const listed = (await server.waitFor(2)) as { result: Record<string, unknown> };
      assert.equal(listed.result.resultType, undefined, '2025-era results carry no resultType');
      assert.equal(listed.result.ttlMs, undefined, '2025-era results carry no cache hints');
    } finally {
      await server.end();
      removeProject(project);
    }
  });
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { makeProject, removeProject } from '../support/project.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer, type RawMessage, type RawStdioServer, toolCallLine } from '../support/raw-stdio.js';
import { serverCommand, serverEnv, waitForStderr } from '../support/server.js';
import { ClientRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { SERVED_METHODS } from '../../src/supervisor/session/mcp-session.js';
import { waitFor } from '../support/wait-for.js';
import { startInProcessSession } from '../support/in-process-server.js';
import { rawLines } from '../support/op-raw-session.js';

// Every malformed JSON-RPC message written to the real server's standard
// input gets its answer on standard output (JSON-RPC 2.0 sections 4.1, 5, 5.1),
// malformed notifications get none, and the session keeps serving. Each case
// is followed by a ping: what the gate answers arrives before the ping's
// response, so the messages up to it are exactly the answers to that case.
// Those cases share one real process: they also check that nothing but JSON-RPC
// reaches descriptor 1 and no client bytes reach descriptor 2. The flood needs a
// process of its own (its memory, its pipes). The revision negotiation and the
// probe before initialize are the session's logic on a fresh session each: served
// in this process (in-process-server.ts) on raw lines, through the same line
// limiter and message gate.

const MARKER = 'PROMPT-TEXT-MUST-NOT-BE-LOGGED';

interface ErrorAnswer {
  id: unknown;
  code: number;
}

let server: RawStdioServer;
let project: string;
let pingId = 1000;

async function answersTo(line: string | Buffer, answeredAsId?: number): Promise<RawMessage[]> {
  const before = server.messages().length;
  const id = ++pingId;
  await server.send(line);
  await server.send(jsonLine({ jsonrpc: '2.0', id, method: 'ping' }));
  await server.waitFor(id);
  // A request the SDK answers (not the gate) may be answered after the ping.
  if (answeredAsId !== undefined) await server.waitFor(answeredAsId);
  return server
    .messages()
    .slice(before)
    .filter((m) => m.id !== id);
}

function assertError(answers: RawMessage[], expected: ErrorAnswer, what: string): string {
  assert.equal(answers.length, 1, `${what}: exactly one answer, got ${JSON.stringify(answers)}`);
  const answer = answers[0]!;
  assert.equal(answer.jsonrpc, '2.0', what);
  assert.ok('id' in answer, `${what}: the error carries an id member`);
  assert.deepEqual(answer.id, expected.id, `${what}: id`);
  const error = answer.error as { code: number; message: string };
  assert.equal(error.code, expected.code, `${what}: ${error.message}`);
  assert.equal(typeof error.message, 'string');
  assert.ok(!error.message.includes('\n') && error.message.length < 300, `${what}: one short line: ${error.message}`);
  return error.message;
}

function assertToolError(answers: RawMessage[], id: number, what: string): string {
  assert.equal(answers.length, 1, `${what}: exactly one answer, got ${JSON.stringify(answers)}`);
  const answer = answers[0]!;
  assert.equal(answer.id, id, what);
  assert.equal(answer.error, undefined, `${what}: a tool result, not a JSON-RPC error: ${JSON.stringify(answer.error)}`);
  const result = answer.result as { isError: boolean; content: Array<{ type: string; text: string }> };
  assert.equal(result.isError, true, what);
  assert.equal(result.content.length, 1);
  const text = result.content[0]!.text;
  assert.ok(!text.includes('\n') && text.length < 300, `${what}: one line: ${text}`);
  return text;
}

describe('malformed JSON-RPC over real stdio', () => {
  before(async () => {
    project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
    server = spawnRawServer(project);
    await server.send(jsonLine(INITIALIZE));
    await server.waitFor('init');
    await server.send(jsonLine(INITIALIZED));
  });

  after(async () => {
    await server.end();
    removeProject(project);
  });

  it('answers a line that is not JSON (or not UTF-8) with -32700 and id null', async () => {
    for (const bad of [`not json ${MARKER}\n`, '{"jsonrpc":"2.0","id":7,"method":\n', "{'single': 'quotes'}\n", '{"a":1}{"b":2}\n']) {
      assertError(await answersTo(bad), { id: null, code: -32700 }, JSON.stringify(bad));
    }
    const notUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}\n')]);
    assertError(await answersTo(notUtf8), { id: null, code: -32700 }, 'invalid UTF-8');
  });

  it('answers a batch with one -32600 (batches are not supported) and leaves a batch of notifications unanswered', async () => {
    const batch = jsonLine([
      { jsonrpc: '2.0', id: 21, method: 'ping' },
      { jsonrpc: '2.0', id: 22, method: 'tools/list' },
    ]);
    const message = assertError(await answersTo(batch), { id: null, code: -32600 }, 'batch');
    assert.match(message, /batch/);
    assertError(await answersTo('[]\n'), { id: null, code: -32600 }, 'empty batch');
    assert.deepEqual(await answersTo(jsonLine([INITIALIZED, INITIALIZED])), [], 'a batch of notifications is not answered');
    // Neither request inside the refused batch was run.
    assert.equal(
      server.messages().some((m) => m.id === 21 || m.id === 22),
      false,
    );
  });

  it('answers values that are not requests with -32600 and id null', async () => {
    for (const bad of ['42\n', '"ping"\n', 'null\n', 'true\n', '{"jsonrpc":"2.0"}\n', '{"jsonrpc":"2.0","method":1,"params":"bar"}\n']) {
      assertError(await answersTo(bad), { id: null, code: -32600 }, bad.trim());
    }
  });

  it('answers bad params members with -32600 carrying the request id', async () => {
    const cases: Array<[unknown, string]> = [
      [[1, 2], 'array'],
      ['text', 'string'],
      [null, 'null'],
      [7, 'number'],
    ];
    let id = 30;
    for (const [params] of cases) {
      id++;
      assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id, method: 'tools/list', params })), { id, code: -32600 }, `params ${JSON.stringify(params)}`);
    }
    // A string id is carried back as well.
    assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id: 'req-a', method: 'ping', params: [] })), { id: 'req-a', code: -32600 }, 'string id');
    assertError(await answersTo(jsonLine({ jsonrpc: '1.0', id: 36, method: 'ping' })), { id: 36, code: -32600 }, 'jsonrpc 1.0');
    assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id: 37, method: 'ping', extra: true })), { id: 37, code: -32600 }, 'unknown member');
    assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id: 38 })), { id: 38, code: -32600 }, 'no method');
  });

  it('answers invalid ids with -32600 and id null', async () => {
    for (const rawId of ['1.5', '9007199254740993', '-9007199254740993', '1e300', 'null', 'true', 'false', '{}', '[1]']) {
      const message = assertError(await answersTo(`{"jsonrpc":"2.0","id":${rawId},"method":"ping"}\n`), { id: null, code: -32600 }, `id ${rawId}`);
      assert.match(message, /"id" must be a string or an integer/);
    }
  });

  it('answers a _meta.progressToken of the wrong type with -32600 carrying the id', async () => {
    let id = 40;
    for (const token of [1.5, true, { a: 1 }, null, [1]]) {
      id++;
      const request = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_agents', arguments: {}, _meta: { progressToken: token } } };
      const message = assertError(await answersTo(jsonLine(request)), { id, code: -32600 }, `progressToken ${JSON.stringify(token)}`);
      assert.match(message, /progressToken/);
    }
    assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id: 49, method: 'ping', params: { _meta: 'x' } })), { id: 49, code: -32600 }, '_meta string');
  });

  it('answers a line that starts with a UTF-8 byte-order mark as if the mark were absent, and logs no client bytes', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const stderrBefore = server.stderr().length;
    const request = { jsonrpc: '2.0', id: 130, method: 'tools/call', params: { name: 'get_agent_dsl', arguments: { agent: 'assistant' } } };
    const answers = await answersTo(Buffer.concat([bom, Buffer.from(jsonLine(request))]), 130);
    assert.equal(answers.length, 1, JSON.stringify(answers));
    assert.equal((answers[0]!.result as { content: Array<{ text: string }> }).content[0]!.text, 'agent assistant {\n}\n');
    // A mark before text that is not JSON is a parse error like any other.
    assertError(await answersTo(Buffer.concat([bom, Buffer.from(`not json ${MARKER}\n`)])), { id: null, code: -32700 }, 'BOM then garbage');
    // A mark before a notification: not answered, but the session keeps serving (the ping after it is answered).
    assert.deepEqual(await answersTo(Buffer.concat([bom, Buffer.from(jsonLine(INITIALIZED))])), []);
    const logged = server.stderr().slice(stderrBefore);
    assert.ok(!logged.includes(MARKER) && !logged.includes('\ufeff') && !logged.includes('jsonrpc'), `no client bytes on stderr: ${logged}`);
  });

  it('answers an unknown method whose _meta the MCP message schema refuses with -32600, and a valid one with -32601', async () => {
    const related = 'io.modelcontextprotocol/related-task';
    const stderrBefore = server.stderr().length;
    for (const [id, meta] of [
      [131, { [related]: `${MARKER}` }],
      [132, { [related]: { taskId: 7 } }],
      [133, { progressToken: 'ok', [related]: [] }],
    ] as const) {
      const request = { jsonrpc: '2.0', id, method: 'vendor/unknown', params: { _meta: meta } };
      const message = assertError(await answersTo(jsonLine(request)), { id, code: -32600 }, `_meta ${JSON.stringify(meta)}`);
      assert.match(message, /_meta/);
      assert.ok(!message.includes(MARKER), message);
    }
    // A well-formed request for a method the server does not serve: -32601.
    const unknown = { jsonrpc: '2.0', id: 134, method: 'vendor/unknown', params: { _meta: { [related]: { taskId: 't1' } } } };
    assertError(await answersTo(jsonLine(unknown), 134), { id: 134, code: -32601 }, 'unknown method');
    // The same _meta on a notification is never answered, but is logged without the bytes.
    assert.deepEqual(await answersTo(jsonLine({ jsonrpc: '2.0', method: 'vendor/notice', params: { _meta: { [related]: MARKER } } })), []);
    // Standard error is its own pipe: its line can reach this process after the ping's answer on standard output.
    const notLogged = /malformed notification \(not answered\)/;
    const logged = (await waitForStderr(server, (text) => notLogged.test(text.slice(stderrBefore)))).slice(stderrBefore);
    assert.match(logged, notLogged);
    assert.ok(!logged.includes(MARKER), logged);
  });

  it('answers invalid params of a known method with -32602 in one line', async () => {
    const cases: Array<[number, string, unknown]> = [
      [51, 'tools/call', {}],
      [52, 'tools/call', { name: 5 }],
      [53, 'resources/read', {}],
      [54, 'resources/read', { uri: 42 }],
    ];
    for (const [id, method, params] of cases) {
      assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id, method, params })), { id, code: -32602 }, `${method} ${JSON.stringify(params)}`);
    }
  });

  // The methods the server serves are answered by their handlers; every other method of MCP's
  // client requests is -32601 before its params are looked at (a probe for another revision's method
  // must read "not found", not "bad params"). An unknown tool is -32602 naming the tools. This session
  // opened with initialize (2025-06-18): server/discover, a 2026-07-28 method, is served by the
  // server (in that era) and answered -32601 by the SDK.
  it('answers -32601 for every method it does not serve, whatever the params, and serves exactly SERVED_METHODS', async () => {
    const served = new Set([
      'initialize',
      'ping',
      'server/discover',
      'tools/list',
      'tools/call',
      'resources/list',
      'resources/templates/list',
      'resources/read',
    ]);
    assert.deepEqual([...SERVED_METHODS].sort(), [...served].sort(), 'the list the gate uses');
    const everyMethod = ClientRequestSchema.options.map((option) => (option.shape.method as { value: string }).value);
    let id = 900;
    for (const method of everyMethod) {
      id++;
      const answers = await answersTo(jsonLine({ jsonrpc: '2.0', id, method, params: {} }), id);
      assert.equal(answers.length, 1, `${method}: one answer`);
      const code = (answers[0]!.error as { code?: number } | undefined)?.code;
      if (served.has(method)) assert.notEqual(code, -32601, `${method} is served`);
      else assert.equal(code, -32601, `${method} is not served: ${JSON.stringify(answers[0])}`);
    }
    const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    for (const [method, params] of [
      ['logging/setLevel', {}],
      ['prompts/get', {}],
      ['resources/subscribe', {}],
      ['subscriptions/listen', { _meta: envelope, filter: {} }],
    ] as const) {
      id++;
      const message = assertError(await answersTo(jsonLine({ jsonrpc: '2.0', id, method, params })), { id, code: -32601 }, method);
      assert.match(message, /^Method not found: .*; this server serves initialize, ping, resources\/list/);
    }
    id++;
    assertError(
      await answersTo(jsonLine({ jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: envelope } }), id),
      { id, code: -32601 },
      'server/discover after initialize',
    );
    id++;
    const unknownTool = { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } };
    assert.match(assertError(await answersTo(jsonLine(unknownTool)), { id, code: -32602 }, 'unknown tool'), /unknown tool "no_such_tool"; the tools are /);
  });

  it('refuses tool arguments that are not an object with a one-line isError result', async () => {
    let id = 60;
    for (const args of [null, 5, 'agent=assistant', ['assistant'], true, false]) {
      for (const tool of ['list_agents', 'get_agent_dsl', 'invoke_agent']) {
        id++;
        const text = assertToolError(
          await answersTo(jsonLine({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } })),
          id,
          `${tool} ${JSON.stringify(args)}`,
        );
        assert.match(text, new RegExp(`^${tool}: arguments must be an object, got `));
      }
    }
  });

  it('refuses __proto__, constructor and prototype as unknown arguments', async () => {
    let id = 100;
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      for (const tool of ['get_agent_dsl', 'list_agents', 'parse_dsl', 'invoke_agent', 'verify_schema']) {
        id++;
        const valid: Record<string, string> = {
          get_agent_dsl: '"agent":"assistant"',
          list_agents: '',
          parse_dsl: '"content":"agent a {}"',
          invoke_agent: '"agent":"assistant","prompt":"hi"',
          verify_schema: '"schema":"{}","public_key_url":"https://127.0.0.1:9/k.json"',
        };
        const args = `{${valid[tool] ? `${valid[tool]},` : ''}"${key}":{"agent":"x"}}`;
        const line = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":${args}}}\n`;
        const text = assertToolError(await answersTo(line, id), id, `${tool} ${key}`);
        assert.match(text, new RegExp(`unknown argument "${key}"`));
      }
    }
  });

  it('never answers a malformed notification, but says so on stderr', async () => {
    const notifications = [
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: [1] },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1.5 } },
      { jsonrpc: '1.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: {}, progress: 1 } },
      { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: { progressToken: 2.5 } } },
    ];
    const stderrBefore = server.stderr().length;
    for (const n of notifications) assert.deepEqual(await answersTo(jsonLine(n)), [], JSON.stringify(n));
    // Standard error is a pipe of its own: its last lines can arrive after the ping's answer on standard output.
    const notAnswered = (text: string) => text.slice(stderrBefore).match(/malformed .*notification \(not answered\)/g) ?? [];
    const logged = (await waitForStderr(server, (text) => notAnswered(text).length >= notifications.length)).slice(stderrBefore);
    assert.equal((logged.match(/malformed .*notification \(not answered\)/g) ?? []).length, notifications.length, logged);
  });

  it('never answers a response from the client, well-formed or not', async () => {
    assert.deepEqual(await answersTo(jsonLine({ jsonrpc: '2.0', id: 9999, result: { note: MARKER } })), []);
    assert.deepEqual(await answersTo(jsonLine({ jsonrpc: '2.0', id: 9998, error: { code: 'x', message: MARKER } })), []);
    assert.deepEqual(await answersTo(jsonLine({ jsonrpc: '2.0', result: {} })), []);
  });

  it('answers a line over the 8 MiB limit with -32600 and keeps serving', async () => {
    const huge = `{"jsonrpc":"2.0","id":120,"method":"tools/call","params":{"name":"parse_dsl","arguments":{"content":"${'b'.repeat(8 * 1024 * 1024)}"}}}\n`;
    const message = assertError(await answersTo(huge), { id: null, code: -32600 }, 'overlong line');
    assert.match(message, /limited to 8388608 bytes/);
  });

  it('keeps serving, writes only JSON-RPC to stdout and never echoes the bytes to stderr', async () => {
    await server.send(toolCallLine(200, 'get_agent_dsl', { agent: 'assistant' }));
    const dsl = await server.waitFor(200);
    assert.equal((dsl.result as { content: Array<{ text: string }> }).content[0]!.text, 'agent assistant {\n}\n');
    for (const l of server.lines()) assert.equal((JSON.parse(l) as { jsonrpc: string }).jsonrpc, '2.0');
    assert.ok(!server.stderr().includes(MARKER), 'rejected input is never echoed');
    assert.match(server.stderr(), /malformed message from the client: answered -32700: not valid JSON/);
  });
});

/** How far the server's resident memory may grow while a flood's answers stay unread (see the measurements at the check). */
const GROWTH_LIMIT_MIB = 40;

describe('a client that floods malformed lines without reading the answers', () => {
  it('stalls its own input instead of growing the server memory', async () => {
    const floodProject = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
    const { command, args } = serverCommand(floodProject);
    const child = spawn(command, args, { env: serverEnv(), stdio: ['pipe', 'pipe', 'ignore'] });
    const rssKiB = (field: 'VmRSS' | 'VmHWM'): number =>
      Number(new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
    // The server's thread count, sampled from its start: the analysis thread's end is a drop below the most seen.
    const threads = (): number => Number(/Threads:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
    let mostThreads = 0;
    const sampler = setInterval(() => {
      try {
        mostThreads = Math.max(mostThreads, threads());
      } catch {
        // The process is gone: the test fails on what it reads next.
      }
    }, 5);
    try {
      child.stdin.on('error', () => undefined);
      // Answer the handshake and a list_agents (which waits for the startup analysis of the agent
      // sources), and let the analysis thread end, so only the flood can grow the server now.
      const answered = (count: number) =>
        new Promise<void>((resolve) => {
          let seen = 0;
          const onData = (chunk: Buffer) => {
            seen += chunk.toString('utf8').split('\n').length - 1;
            if (seen >= count) {
              child.stdout.off('data', onData);
              resolve();
            }
          };
          child.stdout.on('data', onData);
        });
      const settled = answered(2);
      child.stdin.write(jsonLine(INITIALIZE));
      child.stdin.write(toolCallLine('agents', 'list_agents', {}));
      await settled;
      child.stdout.pause();
      await waitFor('the analysis thread to end', () => (threads() < mostThreads ? true : undefined));
      const before = rssKiB('VmRSS');
      // Each 2-byte line earns a ~90-byte answer: 4 MB of input asks for ~180 MB of output.
      const garbage = Buffer.from('x\n'.repeat(10_000));
      for (let i = 0; i < 200; i++) child.stdin.write(garbage);
      let peak = before;
      // Sampled for a fixed time on purpose: what is checked is that memory does NOT grow while the
      // answers stay unread, and an absence has no event to wait for.
      for (let waited = 0; waited < 4000; waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
        peak = Math.max(peak, rssKiB('VmRSS'));
      }
      const growthMiB = (peak - before) / 1024;
      // Measured with the backpressure: 11 to 13 MiB on Node.js 20, 17 to 26 MiB on Node.js 24 (its
      // V8 lets the heap grow further under this garbage); without it, 58 MiB on Node.js 20.
      assert.ok(growthMiB < GROWTH_LIMIT_MIB, `peak RSS grew by ${growthMiB.toFixed(1)} MiB while the answers were not read`);
    } finally {
      clearInterval(sampler);
      child.kill('SIGKILL');
      removeProject(floodProject);
    }
  });
});

// MCP 2025-03-26 is the one revision whose receivers must accept JSON-RPC batches; the server does
// not process batches, so it does not offer that revision: a client asking for it is answered
// 2024-11-05 (which has no batches), and a batch is refused with one -32600 under every revision
// the server does negotiate.
describe('the MCP revision with batches is not negotiated', () => {
  let revisionProject: string;
  before(() => {
    revisionProject = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
  });
  after(() => removeProject(revisionProject));

  const answered: Record<string, string> = { '2025-03-26': '2024-11-05', '2024-11-05': '2024-11-05', '2025-06-18': '2025-06-18', '2025-11-25': '2025-11-25' };
  for (const [requested, expected] of Object.entries(answered)) {
    it(`initialize asking for ${requested} is answered ${expected}; a batch then gets one -32600 and the session goes on`, async () => {
      const raw = rawLines(await startInProcessSession(revisionProject));
      try {
        await raw.send(jsonLine({ ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: requested } }));
        const init = (await raw.waitFor('init')) as { result: { protocolVersion: string; serverInfo: { name: string } } };
        assert.equal(init.result.protocolVersion, expected);
        assert.equal(init.result.serverInfo.name, 'symbi-mcp');
        await raw.send(jsonLine(INITIALIZED));
        await raw.send(
          jsonLine([
            { jsonrpc: '2.0', id: 31, method: 'ping' },
            { jsonrpc: '2.0', id: 32, method: 'tools/list' },
          ]),
        );
        await raw.send(jsonLine({ jsonrpc: '2.0', id: 33, method: 'ping' }));
        await raw.waitFor(33);
        const answers = raw.messages().filter((m) => m.id !== 'init' && m.id !== 33);
        assertError(answers, { id: null, code: -32600 }, `a batch under ${expected}`);
        assert.equal(
          raw.messages().some((m) => m.id === 31 || m.id === 32),
          false,
          'nothing in the refused batch ran',
        );
      } finally {
        await raw.end();
      }
    });
  }
});

// Claude Code 2.1.332 first probes for MCP 2026-07-28 with `server/discover`, before any
// `initialize`, and falls back to `initialize` on a JSON-RPC error other than a recognized 2026-07-28
// one (basic/transports/stdio.mdx, "Backward Compatibility"). A probe with the whole envelope is
// answered (test/process/protocol-2026.test.ts); one whose envelope is incomplete gets exactly one error,
// which is not a 2026-07-28 error, and initialize then opens a working 2025-era session.
describe('a server/discover probe before initialize', () => {
  let probeProject: string;
  before(() => {
    probeProject = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
  });
  after(() => removeProject(probeProject));

  it('with an incomplete envelope is answered with one -32602, and initialize then opens a working session', async () => {
    const raw = rawLines(await startInProcessSession(probeProject));
    try {
      await raw.send(
        jsonLine({ jsonrpc: '2.0', id: 0, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }),
      );
      const probe = (await raw.waitFor(0)) as { error?: { code: number; message: string }; result?: unknown };
      assert.equal(probe.result, undefined, 'no result for an envelope without the client capabilities');
      assert.equal(probe.error?.code, -32602, JSON.stringify(probe.error));
      assert.match(probe.error.message, /clientCapabilities/);
      assert.ok(!probe.error.message.includes('\n'), 'one line');
      await raw.send(jsonLine(INITIALIZE));
      const init = (await raw.waitFor('init')) as { result: { protocolVersion: string } };
      assert.equal(init.result.protocolVersion, INITIALIZE.params.protocolVersion);
      await raw.send(jsonLine(INITIALIZED));
      await raw.send(jsonLine({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
      const listed = (await raw.waitFor(2)) as { result: { tools: { name: string }[] } };
      assert.ok(listed.result.tools.some((tool) => tool.name === 'invoke_agent'));
      assert.equal(raw.messages().filter((m) => m.id === 0).length, 1, 'exactly one answer to the probe');
    } finally {
      await raw.end();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { jsonLine, spawnInitializedServer, type RawStdioServer } from '../support/raw-stdio.js';

// Strings a caller sends come back in errors cut and escaped, as every other
// argument error does: an unknown tool name of a mebibyte with newlines and
// ESC bytes is not echoed whole, and a resources/read `uri` that is not a URI
// is invalid params (-32602), as docs/running.md says. The answers go over raw
// stdio; the operator log's escaping is the session's, served in process
// (test/support/in-process-server.ts).

// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_ON_STDERR = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('caller strings in error answers', () => {
  let project: string;
  let server: RawStdioServer;

  before(async () => {
    project = makeProject({ 'agents/assistant.symbi': 'agent assistant {}\n', 'AGENTS.md': '# Project\n' });
    server = spawnInitializedServer(project);
    await server.waitFor('init');
  });

  after(async () => {
    await server.end();
    removeProject(project);
  });

  it('cuts and escapes an unknown tool name', async () => {
    const name = `${'x'.repeat(512 * 1024)}\n\u001b[2J\u202e${'y'.repeat(512 * 1024)}`;
    await server.send(jsonLine({ jsonrpc: '2.0', id: 'long-name', method: 'tools/call', params: { name, arguments: {} } }));
    // An unknown tool is a protocol error (-32602), as MCP's tools page lists it.
    const answer = (await server.waitFor('long-name')) as { error?: { code: number; message: string } };
    assert.equal(answer.error?.code, -32602);
    const text = answer.error.message;
    assert.ok(text.length < 500, `${text.length} characters`);
    assert.match(text, /unknown tool "x+\.\.\."/);
    assert.doesNotMatch(text, UNSAFE);

    await server.send(jsonLine({ jsonrpc: '2.0', id: 'esc-name', method: 'tools/call', params: { name: 'a\u001b[2J\u202eb', arguments: {} } }));
    const short = (await server.waitFor('esc-name')) as { error?: { code: number; message: string } };
    assert.equal(short.error?.code, -32602);
    assert.doesNotMatch(short.error.message, UNSAFE);
    assert.match(short.error.message, /a\\u001b\[2J\\u202eb/);
  });

  it('answers resources/read with a uri that is not a URI with -32602', async () => {
    await server.send(jsonLine({ jsonrpc: '2.0', id: 'bad-uri', method: 'resources/read', params: { uri: 'not a uri' } }));
    const answer = (await server.waitFor('bad-uri')) as { error?: { code: number; message: string } };
    assert.equal(answer.error?.code, -32602, JSON.stringify(answer));
    assert.match(answer.error.message, /uri/);
  });
});

describe('caller strings on the operator log', () => {
  it('escape C1 and bidirectional controls in a field value, as the message already is', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {}\n' });
    const server = await startInProcessServer(project);
    try {
      // A name with a space is quoted as JSON on the log, which leaves U+009B (CSI) and U+202E as they are.
      await server.call('invoke_agent', { agent: 'a b\u009b2J\u202e', prompt: 'hi' });
      await server.close();
      assert.match(server.stderr(), /invoke_agent refused before inference/);
      assert.doesNotMatch(server.stderr(), UNSAFE_ON_STDERR);
    } finally {
      removeProject(project);
    }
  });
});

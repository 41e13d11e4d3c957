import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { SCHEMA_MAX_BYTES } from '../../src/shared/limits.js';
import { registerVerifySchemaTool } from '../../src/supervisor/tools/verify-schema-tool.js';
import { SAMPLE_SCHEMA, ecKeyPair, signSchema, startKeyServer, tempProject, type KeyServer, type TempProject } from '../support/schemapin-fixtures.js';

// verify_schema through the real MCP tool: an SDK server holding only this
// tool, connected to an SDK client in memory.

async function connect(options: Parameters<typeof registerVerifySchemaTool>[1]): Promise<{ client: Client; close: () => Promise<void> }> {
  const server = new McpServer({ name: 'schemapin-test', version: '0.0.0' });
  registerVerifySchemaTool(server, options);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'schemapin-test-client', version: '0.0.0' });
  await server.connect(serverSide);
  await client.connect(clientSide);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

function textOf(result: CallToolResult): string {
  const first = result.content[0];
  assert.ok(first && first.type === 'text');
  return first.text;
}

describe('verify_schema MCP tool', () => {
  let keys: KeyServer;
  let temp: TempProject;
  let client: Client;
  let close: () => Promise<void>;
  const logged: string[] = [];
  const key = ecKeyPair();
  const signature = signSchema(SAMPLE_SCHEMA, key.privateKey);

  before(async () => {
    keys = await startKeyServer();
    keys.serve('/.well-known/schemapin.json', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ public_key_pem: key.publicPem }) });
    temp = tempProject();
    ({ client, close } = await connect({ project: temp.project, log: (line) => logged.push(line), allowInsecure: true }));
  });
  after(async () => {
    await close();
    await keys.close();
    temp.remove();
  });

  it('warns once through the log callback that the insecure switch is on', () => {
    assert.equal(logged.filter((l) => l.includes('SYMBIONT_SCHEMAPIN_ALLOW_INSECURE=1')).length, 1);
  });

  it('advertises its arguments, output and annotations', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'verify_schema');
    assert.ok(tool);
    assert.deepEqual(tool.inputSchema.required, ['schema', 'public_key_url']);
    const props = tool.inputSchema.properties as Record<string, { type?: string }>;
    assert.equal(props.schema?.type, 'string');
    assert.equal(props.public_key_url?.type, 'string');
    assert.equal(props.signature?.type, 'string');
    assert.ok(tool.outputSchema);
    assert.equal(tool.annotations?.readOnlyHint, false);
    assert.equal(tool.annotations?.openWorldHint, true);
  });

  it('verifies a signed schema and returns the report as structured content and the same JSON text', async () => {
    const result = await client.callTool({
      name: 'verify_schema',
      arguments: { schema: JSON.stringify(SAMPLE_SCHEMA), public_key_url: keys.url('/.well-known/schemapin.json'), signature },
    });
    assert.notEqual(result.isError, true);
    const structured = result.structuredContent as Record<string, unknown>;
    assert.equal(structured.verified, true, String(structured.message));
    assert.equal(structured.pinned, 'new');
    assert.equal(structured.key_fingerprint, key.fingerprint);
    assert.deepEqual(structured.signature, { algorithm: 'ECDSA_P256', valid: true });
    assert.deepEqual(JSON.parse(textOf(result)), structured);
  });

  it('returns a failed verification normally, with verified false', async () => {
    const result = await client.callTool({
      name: 'verify_schema',
      arguments: { schema: JSON.stringify({ ...SAMPLE_SCHEMA, name: 'write_file' }), public_key_url: keys.url('/.well-known/schemapin.json'), signature },
    });
    assert.notEqual(result.isError, true);
    const structured = result.structuredContent as Record<string, unknown>;
    assert.equal(structured.verified, false);
    assert.equal(structured.pinned, 'matched');
    assert.match(String(structured.message), /signature does not match/);
  });

  it('answers unusable arguments with a one-line tool error', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ public_key_url: 'https://x.example/k' }, /missing required argument "schema"/],
      [{ schema: 5, public_key_url: 'https://x.example/k' }, /argument "schema" must be a string, got a number/],
      [{ schema: '{}', public_key_url: 'https://x.example/k', extra: 1 }, /unknown argument "extra"/],
      [{ schema: '{', public_key_url: 'https://x.example/k' }, /schema is not valid JSON/],
      [{ schema: ' '.repeat(SCHEMA_MAX_BYTES + 1), public_key_url: 'https://x.example/k' }, /schema is 1048577 bytes; the limit is 1048576 bytes/],
      [{ schema: '{}', public_key_url: 'https://x.example/' + 'a'.repeat(9000) }, /public_key_url is \d+ bytes; the limit is 8192 bytes/],
    ];
    for (const [args, pattern] of cases) {
      const result = await client.callTool({ name: 'verify_schema', arguments: args });
      assert.equal(result.isError, true, String(pattern));
      const text = textOf(result);
      assert.match(text, pattern);
      assert.match(text, /^verify_schema: /);
      assert.equal(text.includes('\n'), false);
    }
  });
});

describe('verify_schema MCP tool without the insecure switch', () => {
  it('does not warn, and refuses a loopback key URL in a normal result', async () => {
    const temp = tempProject();
    const logged: string[] = [];
    const { client, close } = await connect({ project: temp.project, log: (l) => logged.push(l), allowInsecure: false });
    try {
      assert.deepEqual(logged, []);
      const key = ecKeyPair();
      const result = await client.callTool({
        name: 'verify_schema',
        arguments: { schema: JSON.stringify(SAMPLE_SCHEMA), public_key_url: 'https://127.0.0.1/key.pem', signature: signSchema(SAMPLE_SCHEMA, key.privateKey) },
      });
      const structured = result.structuredContent as Record<string, unknown>;
      assert.equal(structured.verified, false);
      assert.match(String(structured.message), /loopback address/);
    } finally {
      await close();
      temp.remove();
    }
  });
});

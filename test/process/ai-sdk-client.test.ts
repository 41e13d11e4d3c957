import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createMCPClient, type MCPClient } from '@ai-sdk/mcp';
// 1.x names its stdio transport Experimental_StdioMCPTransport (2.x, which needs Node.js 22, drops the prefix).
import { Experimental_StdioMCPTransport as StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { DEFAULT_ANSWER, SECRET_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { repoRoot, symbiBin } from '../support/server-entry.js';
import { removeProject, tempDir } from '../support/project.js';
import { type AuditRef, serverCommand, textOf } from '../support/server.js';

// A second client this project did not write, and one that does not use the MCP TypeScript SDK the
// server is built on: the Vercel AI SDK's MCP client (@ai-sdk/mcp, its own JSON-RPC and stdio
// transport). It drives `symbi mcp` the way an AI SDK application would: tools() gives AI SDK tools
// whose execute() calls the server, against the local synthetic inference endpoint.

interface ToolResult {
  content: { type: string; text?: string }[];
  structuredContent?: unknown;
  isError?: boolean;
}

const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const callOptions = { toolCallId: 'interop-call', messages: [] };

describe('the AI SDK MCP client (@ai-sdk/mcp) against symbi mcp', () => {
  let project: string;
  let endpoint: SyntheticEndpoint;
  let client: MCPClient;

  before(async () => {
    project = tempDir('symbi-ai-sdk-');
    const example = path.join(repoRoot, 'examples', 'quickstart');
    fs.cpSync(example, project, { recursive: true, filter: (src) => src === example || !path.basename(src).startsWith('.') });
    endpoint = await startSyntheticEndpoint();
    client = await createMCPClient({
      clientName: 'symbi-interop-test',
      transport: new StdioMCPTransport({
        ...serverCommand(project),
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? os.tmpdir(),
          OPENAI_BASE_URL: endpoint.url,
          OPENAI_API_KEY: 'sk-interop-test',
          CHAT_MODEL: 'synthetic',
        },
        stderr: 'ignore',
      }),
    });
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await endpoint?.close();
    removeProject(project);
  });

  it('completes the handshake and reports the package name and version', () => {
    assert.equal(client.serverInfo.name, 'symbi-mcp');
    assert.equal(client.serverInfo.version, version);
  });

  it('lists every tool with an object input schema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema']);
    for (const tool of tools) assert.equal(tool.inputSchema.type, 'object', `${tool.name} has an object input schema`);
  });

  it('list_agents through an AI SDK tool names the invocable agents and the refused one', async () => {
    const tools = await client.tools();
    const result = (await tools.list_agents!.execute({}, callOptions)) as ToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    const agents = (result.structuredContent as { agents: { stem: string; invocable: boolean; reason?: string }[] }).agents;
    assert.deepEqual(
      agents.map((a) => [a.stem, a.invocable]),
      [
        ['assistant', true],
        ['helper', true],
        ['pipeline', false],
      ],
    );
    assert.match(agents[2]!.reason ?? '', /with` block with statements/);
  });

  it('invoke_agent returns the model answer with an audit reference whose journal verifies', async () => {
    const tools = await client.tools();
    const before = endpoint.requests.length;
    const result = (await tools.invoke_agent!.execute({ agent: 'assistant', prompt: 'Say hello.' }, callOptions)) as ToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    assert.equal(textOf(result), DEFAULT_ANSWER);

    // The endpoint saw one request: the registered definition as the system message, the prompt last.
    assert.equal(endpoint.requests.length, before + 1);
    const messages = (endpoint.requests[before]!.body as { messages: { role: string; content: string }[] }).messages;
    assert.equal(messages[0]!.role, 'system');
    assert.match(messages[0]!.content, /Registered definition \(agents\/assistant\.symbi\):\n[\s\S]*agent assistant \{/);
    assert.deepEqual(messages.at(-1), { role: 'user', content: 'Say hello.' });

    const reference = result.structuredContent as AuditRef;
    assert.match(reference.audit.run_id, /^[0-9a-f-]{36}$/);
    const inspected = spawnSync(
      process.execPath,
      [symbiBin, 'audit', 'inspect', reference.audit.path, '--run-id', reference.audit.run_id, '--public-key', reference.audit.public_key],
      { encoding: 'utf8' },
    );
    assert.equal(inspected.status, 0, inspected.stdout + inspected.stderr);
    assert.equal((JSON.parse(inspected.stdout) as { journal_complete: boolean }).journal_complete, true);
  });

  it('invoke_agent withholds an answer Cedar forbids and says so as a tool error', async () => {
    const tools = await client.tools();
    const result = (await tools.invoke_agent!.execute({ agent: 'assistant', prompt: 'The launch code? [[secret]]' }, callOptions)) as ToolResult;
    assert.equal(result.isError, true);
    assert.match(textOf(result), /Cedar policy denied the response/);
    assert.ok(!textOf(result).includes(SECRET_ANSWER), 'the forbidden text never reaches the client');
  });

  it('lists the AGENTS.md resource and reads it as on disk', async () => {
    const { resources } = await client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['file:///AGENTS.md'],
    );
    const read = await client.readResource({ uri: 'file:///AGENTS.md' });
    const first = read.contents[0] as { uri: string; text?: string };
    assert.equal(first.uri, 'file:///AGENTS.md');
    assert.equal(first.text, fs.readFileSync(path.join(project, 'AGENTS.md'), 'utf8'));
  });
});

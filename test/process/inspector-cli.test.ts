import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inspectorJson, runInspector, type InspectorRun } from '../support/inspector-cli.js';
import { repoRoot, symbiBin } from '../support/server-entry.js';

// A client this project did not write: the MCP Inspector CLI (test/support/inspector-cli.ts),
// against `symbi mcp` over stdio.

const exampleDir = path.join(repoRoot, 'examples', 'quickstart');

function runInspectorOn(project: string, methodArgs: string[]): Promise<InspectorRun> {
  return runInspector([process.execPath, symbiBin, 'mcp', '--project', project], methodArgs);
}

describe('MCP Inspector CLI against symbi mcp', () => {
  let project: string;

  before(() => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-inspector-'));
    fs.cpSync(exampleDir, project, { recursive: true, filter: (src) => src === exampleDir || !path.basename(src).startsWith('.') });
  });

  after(() => {
    fs.rmSync(project, { recursive: true, force: true });
  });

  it('tools/list names every tool with an input schema', async () => {
    const result = inspectorJson(await runInspectorOn(project, ['--method', 'tools/list']));
    const tools = result.tools as { name: string; inputSchema?: { type?: string } }[];
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema']);
    for (const tool of tools) assert.equal(tool.inputSchema?.type, 'object', `${tool.name} has an object input schema`);
  });

  it('tools/call get_agent_dsl returns the source text exactly as on disk', async () => {
    const result = inspectorJson(await runInspectorOn(project, ['--method', 'tools/call', '--tool-name', 'get_agent_dsl', '--tool-arg', 'agent=helper']));
    assert.equal(result.isError, undefined);
    const content = result.content as { type: string; text: string }[];
    const onDisk = fs.readFileSync(path.join(project, 'agents', 'helper.symbi'), 'utf8');
    assert.equal(content[0]!.type, 'text');
    assert.equal(content[0]!.text, onDisk);
    assert.match(content[0]!.text, /agent concierge \{/);
  });

  it('tools/call get_agent_dsl with an unknown agent is a tool error listing the candidates', async () => {
    const result = inspectorJson(await runInspectorOn(project, ['--method', 'tools/call', '--tool-name', 'get_agent_dsl', '--tool-arg', 'agent=nobody']));
    assert.equal(result.isError, true);
    const text = (result.content as { text: string }[])[0]!.text;
    assert.match(text, /unknown agent "nobody"/);
    assert.match(text, /assistant, helper, pipeline/);
  });

  it('resources/list offers AGENTS.md', async () => {
    const result = inspectorJson(await runInspectorOn(project, ['--method', 'resources/list']));
    const uris = (result.resources as { uri: string }[]).map((r) => r.uri);
    assert.deepEqual(uris, ['file:///AGENTS.md']);
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

// A client this project did not write: the MCP Inspector CLI, run as a user would run it
// (`mcp-inspector-cli --cli <command...> --method ...`), against `symbi mcp` over stdio.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const symbiBin = path.join(repoRoot, 'bin', 'symbi.js');
const exampleDir = path.join(repoRoot, 'examples', 'quickstart');

function inspectorBin(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('@modelcontextprotocol/inspector-cli/package.json', { paths: [repoRoot] });
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
}

function runInspector(project: string, methodArgs: string[]): Promise<InspectorRun> {
  const bin = inspectorBin();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--cli', process.execPath, symbiBin, 'mcp', '--project', project, ...methodArgs],
      {
        // inspector-cli 1.0.3 looks for its own package.json as "../package.json" relative to the
        // working directory; running from its build folder makes that lookup succeed.
        cwd: path.dirname(bin),
        // Node must be on PATH: the launcher starts its client with `node`. No provider keys are passed.
        env: { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? os.tmpdir() },
        timeout: 45_000,
        maxBuffer: 8 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function parsed(run: InspectorRun): Record<string, unknown> {
  assert.equal(run.code, 0, `inspector exited ${run.code}: ${run.stderr.slice(-2000)}`);
  // The CLI prints one JSON document on stdout (its deprecation notice goes to stderr).
  const start = run.stdout.indexOf('{');
  assert.ok(start >= 0, `no JSON on stdout: ${run.stdout.slice(0, 500)}`);
  return JSON.parse(run.stdout.slice(start)) as Record<string, unknown>;
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
    const result = parsed(await runInspector(project, ['--method', 'tools/list']));
    const tools = result.tools as { name: string; inputSchema?: { type?: string } }[];
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema']);
    for (const tool of tools) assert.equal(tool.inputSchema?.type, 'object', `${tool.name} has an object input schema`);
  });

  it('tools/call get_agent_dsl returns the source text exactly as on disk', async () => {
    const result = parsed(await runInspector(project, ['--method', 'tools/call', '--tool-name', 'get_agent_dsl', '--tool-arg', 'agent=helper']));
    assert.equal(result.isError, undefined);
    const content = result.content as { type: string; text: string }[];
    const onDisk = fs.readFileSync(path.join(project, 'agents', 'helper.symbi'), 'utf8');
    assert.equal(content[0]!.type, 'text');
    assert.equal(content[0]!.text, onDisk);
    assert.match(content[0]!.text, /agent concierge \{/);
  });

  it('tools/call get_agent_dsl with an unknown agent is a tool error listing the candidates', async () => {
    const result = parsed(await runInspector(project, ['--method', 'tools/call', '--tool-name', 'get_agent_dsl', '--tool-arg', 'agent=nobody']));
    assert.equal(result.isError, true);
    const text = (result.content as { text: string }[])[0]!.text;
    assert.match(text, /unknown agent "nobody"/);
    assert.match(text, /assistant, helper, pipeline/);
  });

  it('resources/list offers AGENTS.md', async () => {
    const result = parsed(await runInspector(project, ['--method', 'resources/list']));
    const uris = (result.resources as { uri: string }[]).map((r) => r.uri);
    assert.deepEqual(uris, ['file:///AGENTS.md']);
  });
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { makeProject, removeDir, resultText, symbiBin } from './support/server-harness.js';

// A system without descriptor-relative access (/proc/self/fd), as on macOS, a
// BSD or a container without procfs, made real: the server runs in its own
// mount namespace with an empty tmpfs over /proc, and a real MCP client drives
// it over stdio. The project has agents, AGENTS.md and policies; none of them
// may be reported absent, and nothing may run under the default permission.

const PROJECT_FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'AGENTS.md': '# Project notes\n',
  'policies/mcp-server/respond.cedar': '@id("permit-respond")\npermit (principal, action == Action::"respond", resource);\n',
};
const REASON = /project files are unavailable: descriptor-relative file access \(\/proc\/self\/fd\) does not work on this Linux system: \/proc\/self\/fd\/\d+\/\. cannot be opened \(ENOENT\); project file confinement requires Linux/;

function skipReason(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces';
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs over /proc in a private mount namespace (run as root)';
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none /proc && test ! -e /proc/self'], { encoding: 'utf8' });
  if (probe.status !== 0) return `unshare -m with a tmpfs over /proc is not possible here: ${(probe.stderr || probe.error?.message || '').trim()}`;
  return undefined;
}

interface Served {
  client: Client;
  stderr(): string;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

// What /proc holds for the server: the kernel's procfs, nothing, or a forgery
// whose /proc/self/fd/<n> are plain empty directories (every project file
// would then read as absent, were the probe not comparing device and inode).
type ProcMount = 'procfs' | 'empty' | 'forged';
const MOUNT_SCRIPTS: Record<Exclude<ProcMount, 'procfs'>, string> = {
  empty: 'mount -t tmpfs none /proc && exec "$0" "$@"',
  forged: 'mount -t tmpfs none /proc && for n in $(seq 0 99); do mkdir -p /proc/self/fd/$n; done && exec "$0" "$@"',
};

async function serve(project: string, proc: ProcMount, env: Record<string, string>): Promise<Served> {
  const server = [symbiBin, 'mcp', '--project', project];
  const transport = new StdioClientTransport(
    proc === 'procfs'
      ? { command: process.execPath, args: server, stderr: 'pipe', env }
      : { command: 'unshare', args: ['-m', 'sh', '-c', MOUNT_SCRIPTS[proc], process.execPath, ...server], stderr: 'pipe', env },
  );
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'descriptor-access-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr, call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult };
}

async function stderrSettled(served: Served): Promise<string> {
  for (let i = 0; i < 300 && !served.stderr().includes('serving MCP'); i++) await new Promise((r) => setTimeout(r, 10));
  return served.stderr();
}

describe('without descriptor-relative access (tmpfs over /proc)', { skip: skipReason() }, () => {
  let project: string;
  let endpoint: http.Server;
  let providerRequests = 0;
  let env: Record<string, string>;

  before(async () => {
    project = makeProject(PROJECT_FILES, 'symbi-noproc-');
    endpoint = http.createServer((_req, res) => {
      providerRequests++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const { port } = endpoint.address() as AddressInfo;
    env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` };
  });

  after(async () => {
    await new Promise<void>((resolve) => endpoint.close(() => resolve()));
    removeDir(project);
  });

  it('serves the same project normally where /proc works (the control)', async () => {
    const served = await serve(project, 'procfs', env);
    try {
      const list = await served.call('list_agents');
      assert.equal(list.isError, undefined, resultText(list));
      assert.equal((list.structuredContent as { agents: unknown[] }).agents.length, 1);
      assert.match(await stderrSettled(served), /policies\/mcp-server\/respond\.cedar: loaded 1 polic/);
    } finally {
      await served.client.close();
      fs.rmSync(path.join(project, '.symbiont'), { recursive: true, force: true });
    }
  });

  it('says why in one stderr line and reports nothing as absent or default-permitted', async () => {
    const served = await serve(project, 'empty', env);
    try {
      await served.client.listTools();
      const stderr = await stderrSettled(served);
      const lines = stderr.split('\n').filter((l) => REASON.test(l));
      assert.equal(lines.length, 1, stderr);
      assert.match(lines[0]!, /policy set denies every response/);
      assert.doesNotMatch(stderr, /does not exist|not present|default permission|no policy files|agents: 0 found|cannot create storage/, stderr);
    } finally {
      await served.client.close();
    }
  });

  it('refuses every file tool, the AGENTS.md resource and invoke_agent with that reason', async () => {
    const served = await serve(project, 'empty', env);
    try {
      for (const [tool, args] of [
        ['list_agents', {}],
        ['get_agent_dsl', { agent: 'assistant' }],
        ['parse_dsl', { file: 'agents/assistant.symbi' }],
        ['get_agents_md', {}],
        ['invoke_agent', { agent: 'assistant', prompt: 'hello' }],
      ] as const) {
        const result = await served.call(tool, args);
        assert.equal(result.isError, true, `${tool}: ${resultText(result)}`);
        assert.match(resultText(result), REASON, tool);
        assert.doesNotMatch(resultText(result), /unknown agent|does not exist|no such file/, tool);
        assert.equal(result.structuredContent, undefined, `${tool}: no audit reference, nothing ran`);
      }
      // Inline DSL needs no project file and still parses.
      const inline = await served.call('parse_dsl', { content: 'agent inline {}\n' });
      assert.equal(inline.isError, undefined, resultText(inline));

      const resources = await served.client.listResources();
      assert.ok(resources.resources.some((r) => r.uri === 'file:///AGENTS.md'), 'the resource stays listed so that reading it gives the reason');
      await assert.rejects(served.client.readResource({ uri: 'file:///AGENTS.md' }), (err: Error) => REASON.test(err.message));

      assert.equal(providerRequests, 0, 'no request reached the provider');
      assert.equal(fs.existsSync(path.join(project, '.symbiont')), false, 'no audit storage was created');
    } finally {
      await served.client.close();
    }
  });

  it('is not fooled by a forged /proc whose fd entries are empty directories', async () => {
    const served = await serve(project, 'forged', env);
    try {
      const stderr = await stderrSettled(served);
      assert.match(stderr, /project files are unavailable: .*\/proc\/self\/fd\/\d+\/\. leads to another directory than the pinned one/, stderr);
      assert.doesNotMatch(stderr, /does not exist|not present|default permission|no policy files|agents: 0 found/, stderr);
      const list = await served.call('list_agents');
      assert.equal(list.isError, true);
      assert.match(resultText(list), /leads to another directory than the pinned one/);
      const invoke = await served.call('invoke_agent', { agent: 'assistant', prompt: 'hello' });
      assert.match(resultText(invoke), /^invoke_agent refused: project files are unavailable/);
      assert.equal(providerRequests, 0);
    } finally {
      await served.client.close();
    }
  });
});

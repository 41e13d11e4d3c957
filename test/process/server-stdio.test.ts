import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer } from '../support/raw-stdio.js';
import { symbiBin } from '../support/server-entry.js';
import { makeProject, removeProject, tempDir } from '../support/project.js';
import { refusedMcpArguments } from '../support/op-mcp-arguments.js';

// Raw stdio: every byte on stdout is a JSON-RPC message, garbage on stdin is
// answered while the server keeps serving, a huge line does not
// grow memory without bound, and the command line refuses bad options.
// The option readers' and commander's refusals run through the command's own
// definition in this process (test/support/op-mcp-arguments.ts); a refused
// --project keeps a `symbi mcp` process, since it is refused only after the
// process-wide startup steps the test process must not take, and it shows the
// exit status and standard error of a real refusal as such.

const call = (id: number, name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
// The answers wait longer than raw-stdio's default: a loaded machine must not fail these.
const ANSWER_WAIT_MS = 120_000;

function peakRssKiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

describe('symbi mcp raw stdio', () => {
  it('writes only JSON-RPC messages to stdout, survives garbage and exits 0 when stdin ends', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n', 'AGENTS.md': '# notes\n' });
    const server = spawnRawServer(project);
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init', ANSWER_WAIT_MS);
      await server.send(jsonLine(INITIALIZED));
      await server.send('this is not json\n');
      await server.send('{"truncated": \n');
      await server.send('[1, 2, 3]\n');
      await server.send('{"jsonrpc":"2.0"}\n');
      await server.send('{"jsonrpc":"1.0","id":5,"method":"x"}\n');
      await server.send('\n\r\n');
      await server.send(Buffer.from([0xff, 0xfe, 0x00, 0x0a]));
      await server.send(jsonLine({ jsonrpc: '2.0', id: 2, method: 'no/such/method' }));
      await server.send(jsonLine(call(3, 'list_agents', {})));
      await server.send(jsonLine(call(4, 'get_agent_dsl', { agent: 'assistant' })));
      await server.send(jsonLine(call(6, 'parse_dsl', { file: 'agents/../../etc/passwd' })));
      await server.send(jsonLine({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_agents', arguments: 'not an object' } }));
      await server.send(jsonLine({ jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri: 'file:///etc/passwd' } }));
      await server.send(jsonLine({ jsonrpc: '2.0', id: 9, method: 'tools/list' }));
      const unknownMethod = await server.waitFor(2, ANSWER_WAIT_MS);
      assert.equal((unknownMethod.error as { code: number }).code, -32601);
      const list = await server.waitFor(3, ANSWER_WAIT_MS);
      assert.ok((list.result as { structuredContent: { agents: unknown[] } }).structuredContent.agents.length === 1);
      const dsl = await server.waitFor(4, ANSWER_WAIT_MS);
      assert.equal((dsl.result as { content: Array<{ text: string }> }).content[0]!.text, 'agent assistant {\n}\n');
      const traversal = await server.waitFor(6, ANSWER_WAIT_MS);
      assert.equal((traversal.result as { isError: boolean }).isError, true);
      const badArgs = await server.waitFor(7, ANSWER_WAIT_MS);
      assert.ok(badArgs.error || (badArgs.result as { isError?: boolean }).isError, 'non-object arguments are refused');
      const badResource = await server.waitFor(8, ANSWER_WAIT_MS);
      assert.ok(badResource.error, 'an unknown resource is a JSON-RPC error');
      await server.waitFor(9, ANSWER_WAIT_MS);
      const code = await server.end();
      assert.equal(code, 0);
      for (const l of server.lines()) {
        const msg = JSON.parse(l) as { jsonrpc?: string };
        assert.equal(msg.jsonrpc, '2.0', `stdout line is JSON-RPC: ${l.slice(0, 120)}`);
      }
      assert.match(server.stderr(), /malformed message from the client: answered -32700: not valid JSON/);
      assert.ok(!server.stderr().includes('this is not json'), 'dropped input is not echoed');
      assert.match(server.stderr(), /shutting down cause="the client closed standard input" live_runs=0 finalised=0 not_finalised=0/);
    } finally {
      await server.end();
      removeProject(project);
    }
  });

  it('drops a 50 MiB line without a newline and keeps serving with bounded memory', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
    const server = spawnRawServer(project);
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init', ANSWER_WAIT_MS);
      await server.send(jsonLine(INITIALIZED));
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      for (let i = 0; i < 50; i++) await server.send(chunk);
      await server.send('\n');
      // A huge line that is valid JSON-RPC is also dropped, not parsed.
      await server.send(
        `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"parse_dsl","arguments":{"content":"${'b'.repeat(9 * 1024 * 1024)}"}}}\n`,
      );
      await server.send(jsonLine(call(2, 'get_agent_dsl', { agent: 'assistant' })));
      const answer = await server.waitFor(2, ANSWER_WAIT_MS);
      assert.equal((answer.result as { content: Array<{ text: string }> }).content[0]!.text, 'agent assistant {\n}\n');
      const peak = peakRssKiB(server.pid);
      assert.ok(peak < 400 * 1024, `peak RSS ${peak} KiB stays far below the bytes sent`);
      assert.equal(
        server.lines().some((l) => l.includes('"id":99')),
        false,
      );
      assert.match(server.stderr(), /an input line of 52428801 bytes, longer than the 8388608-byte line limit, was dropped/);
      assert.equal(await server.end(), 0);
    } finally {
      await server.end();
      removeProject(project);
    }
  });

  it('writes one JSON object per stderr line with --log-format json', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
    const server = spawnRawServer(project, { args: ['--log-format', 'json'] });
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init', ANSWER_WAIT_MS);
      assert.equal(await server.end(), 0);
      const lines = server
        .stderr()
        .split('\n')
        .filter((l) => l.length > 0);
      assert.ok(lines.length >= 5);
      const records = lines.map((l) => JSON.parse(l) as { level: number; msg: string; event?: string; public_key?: string });
      assert.ok(records.some((r) => r.event === 'startup.project'));
      assert.ok(records.some((r) => r.event === 'startup.audit' && /^[0-9a-f]{64}$/.test(r.public_key ?? '')));
      assert.ok(records.every((r) => typeof r.level === 'number' && typeof r.msg === 'string'));
    } finally {
      await server.end();
      removeProject(project);
    }
  });
});

describe('symbi mcp command line', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [symbiBin, 'mcp', ...args], { input: '', encoding: 'utf8', timeout: 20_000 });

  it('refuses bad options with exit 2 and one line on stderr', async () => {
    const dir = tempDir('symbi-cli-');
    const file = path.join(dir, 'plain.txt');
    fs.writeFileSync(file, 'x');
    try {
      // The last member: whether the case needs a process (see the header).
      const cases: Array<[string[], RegExp, boolean]> = [
        [['--log-format', 'xml'], /--log-format "xml" is not supported; use one of: text, json/, false],
        [['--shutdown-grace-ms', 'soon'], /--shutdown-grace-ms "soon" is not valid; use a whole number of milliseconds/, false],
        [['--shutdown-grace-ms', '-5'], /--shutdown-grace-ms/, false],
        [['--project', path.join(dir, 'missing')], /no such directory/, true],
        [['--project', file], /is not a directory/, true],
        [['--no-such-option'], /unknown option/, false],
      ];
      for (const [args, pattern, needsProcess] of cases) {
        const result = needsProcess
          ? run(['--project', dir, ...args])
          : await refusedMcpArguments(['--project', dir, ...args]).then(({ code, stdout, stderr }) => ({ status: code, stdout, stderr }));
        assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
        assert.match(result.stderr, pattern);
        assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
        assert.equal(result.stdout, '');
      }
    } finally {
      removeProject(dir);
    }
  });

  it('serves the current directory by default and exits 0 on end of input', () => {
    const dir = tempDir('symbi-cli-');
    try {
      const result = spawnSync(process.execPath, [symbiBin, 'mcp'], { cwd: dir, input: '', encoding: 'utf8', timeout: 20_000 });
      assert.equal(result.status, 0, result.stderr);
      assert.match(result.stderr, new RegExp(`project pinned: ${fs.realpathSync(dir)}`));
      assert.equal(result.stdout, '');
    } finally {
      removeProject(dir);
    }
  });
});

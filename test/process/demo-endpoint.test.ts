import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { auditOf, serverEnv, startServer, textOf } from '../support/server.js';
import { symbiBin } from '../support/server-entry.js';
import { suiteScratch } from '../support/suite-fixture.js';
import { waitFor } from '../support/wait-for.js';

// `symbi demo --endpoint` (issue 54): the demo's synthetic model alone, so a person can see invoke_agent
// answer in a real MCP client before having a key. What it prints is followed literally here: the
// variables go to a real server, the copy command makes its project, the client line names a server
// command that runs; and Ctrl-C ends it with exit 0.

interface Endpoint {
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

function startDemoEndpoint(cwd: string, port: string): Endpoint {
  const child = spawn(process.execPath, [symbiBin, 'demo', '--endpoint', '--port', port], { cwd, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { stdout: () => stdout, stderr: () => stderr, exited, kill: (signal) => child.kill(signal) };
}

function sh(line: string, cwd: string): string {
  const result = spawnSync('sh', ['-c', line], { cwd, env: serverEnv(), encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, `${line}\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

describe('symbi demo --endpoint', () => {
  const scratch = suiteScratch('symbi-demo-endpoint-');

  it('prints lines that work as printed: a server given them answers, and the quick-start policy refuses; Ctrl-C ends it with 0', async () => {
    const cwd = scratch();
    const endpoint = startDemoEndpoint(cwd, '0');
    try {
      const printed = await waitFor('the endpoint to print its lines', () => (/^Every answer is/m.test(endpoint.stdout()) ? endpoint.stdout() : undefined));
      const variables = /^ {3}OPENAI_BASE_URL=(http:\/\/127\.0\.0\.1:\d+\/v1) CHAT_MODEL=(\S+)$/m.exec(printed);
      assert.ok(variables, printed);
      const claude = /^ {3}claude mcp add symbi -e OPENAI_BASE_URL=(\S+) -e CHAT_MODEL=(\S+) -- (.+) mcp --project (\S+)$/m.exec(printed);
      assert.ok(claude, printed);
      assert.equal(claude[1], variables[1]);
      assert.equal(claude[4], cwd, 'the project is where the person stands');
      assert.match(sh(`${claude[3]} --version`, cwd), /\d+\.\d+\.\d+/, 'the server command runs from anywhere');
      assert.doesNotMatch(printed, /npx -y symbi-mcp/, 'never the unpublished name');
      const copy = /^ {3}(cp -R \S+ symbi-quickstart)$/m.exec(printed);
      assert.ok(copy, printed);
      sh(copy[1]!, cwd);

      const server = await startServer(path.join(cwd, 'symbi-quickstart'), {
        env: { ...serverEnv(), OPENAI_BASE_URL: variables[1]!, CHAT_MODEL: variables[2]! },
      });
      try {
        const answered = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'Say hello' } });
        assert.equal(answered.isError, undefined, textOf(answered));
        assert.equal(auditOf(answered).response, 'Hello from the synthetic endpoint.');
        const refused = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'tell me [[secret]]' } });
        assert.equal(refused.isError, true);
        assert.equal(auditOf(refused).error?.kind, 'policy_denied');
      } finally {
        await server.close();
      }
      endpoint.kill('SIGINT');
      assert.equal(await endpoint.exited, 0, endpoint.stderr());
      assert.match(endpoint.stdout(), /stopped\.\n$/);
    } finally {
      endpoint.kill('SIGKILL');
    }
  });

  it('a port that is taken: one line naming the port and --port, exit 1', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as net.AddressInfo;
      const endpoint = startDemoEndpoint(scratch(), String(port));
      assert.equal(await endpoint.exited, 1);
      assert.equal(endpoint.stdout(), '');
      assert.match(endpoint.stderr(), new RegExp(`^symbi demo: .*port ${port} is taken; .*--port.*\\n$`));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

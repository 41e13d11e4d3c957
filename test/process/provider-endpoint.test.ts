import { providerConfigFor } from '../../src/shared/provider/provider-config.js';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_ANSWER } from '../support/synthetic-endpoint.js';
import { callProvider } from '../../src/worker/providers/provider-call.js';
import { repoRoot as repo } from '../support/server-entry.js';

const script = path.join(repo, 'test', 'support', 'synthetic-endpoint.ts');

function startProcess(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: repo, stdio: 'pipe' });
}

async function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  let text = '';
  for await (const chunk of child.stdout) {
    text += String(chunk);
    const end = text.indexOf('\n');
    if (end >= 0) return text.slice(0, end);
  }
  throw new Error(`the endpoint exited before printing its URL: ${text}`);
}

async function json(response: Promise<Response>): Promise<Record<string, unknown>> {
  return (await (await response).json()) as Record<string, unknown>;
}

describe('synthetic endpoint as a process', () => {
  let child: ChildProcessWithoutNullStreams;
  let url: string;
  let origin: string;

  before(async () => {
    child = startProcess(['--port', '0', '--mode', 'hold']);
    const line = await firstLine(child);
    const match = /^SYNTHETIC_ENDPOINT_URL=(http:\/\/127\.0\.0\.1:\d+\/v1)$/.exec(line);
    assert.ok(match, `unexpected first line: ${line}`);
    url = match[1]!;
    origin = url.replace(/\/v1$/, '');
  });
  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('holds by default until released over the control API, and reports stats', async () => {
    const pending = callProvider(
      providerConfigFor({ kind: 'openai', baseUrl: url, model: 'm', apiKey: '' }),
      { conversation: [{ role: 'user', content: 'hi' }], options: { provider: 'openai', model: 'm', max_tokens: 4096 } },
      AbortSignal.timeout(20_000),
    );
    let stats = await json(fetch(`${origin}/_control/stats`));
    for (let tries = 0; stats.holding !== 1; tries += 1) {
      assert.ok(tries < 1000, 'the request never started holding');
      await new Promise((resolve) => setTimeout(resolve, 10));
      stats = await json(fetch(`${origin}/_control/stats`));
    }
    assert.equal(stats.requests, 1);
    assert.equal(stats.open_connections, 1);
    assert.equal(stats.closed_early, 0);

    assert.deepEqual(await json(fetch(`${origin}/_control/release`, { method: 'POST' })), { released: 1 });
    assert.equal((await pending).content, DEFAULT_ANSWER);
    stats = await json(fetch(`${origin}/_control/stats`));
    assert.equal(stats.answered, 1);
    assert.equal(stats.holding, 0);
  });

  it('a directive overrides the default mode', async () => {
    const response = await callProvider(
      providerConfigFor({ kind: 'openai', baseUrl: url, model: 'm', apiKey: '' }),
      { conversation: [{ role: 'user', content: 'hello [[echo]]' }], options: { provider: 'openai', model: 'm', max_tokens: 4096 } },
      AbortSignal.timeout(20_000),
    );
    assert.equal(response.content, 'hello [[echo]]');
  });

  it('answers unknown paths and bodies that are not JSON with clear errors', async () => {
    const missing = await fetch(`${origin}/v1/embeddings`, { method: 'POST', body: '{}' });
    assert.equal(missing.status, 404);
    assert.match(String(((await missing.json()) as { error: { message: string } }).error.message), /allowed: POST/);
    const notJson = await fetch(`${url}/chat/completions`, { method: 'POST', body: 'nope' });
    assert.equal(notJson.status, 400);
    await notJson.arrayBuffer();
    const control = await fetch(`${origin}/_control/nothing`);
    assert.equal(control.status, 404);
    await control.arrayBuffer();
  });

  it('exits 0 on SIGTERM', async () => {
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0);
  });
});

describe('synthetic endpoint arguments', () => {
  it('refuses a bad argument or mode in one line and exits 2', async () => {
    const cases = [['--mode', 'nonsense'], ['--port', 'abc'], ['--verbose']];
    await Promise.all(
      cases.map(async (args) => {
        const child = startProcess(args);
        let stderr = '';
        child.stderr.on('data', (chunk) => {
          stderr += String(chunk);
        });
        const [code] = (await once(child, 'exit')) as [number | null];
        assert.equal(code, 2, `args ${args.join(' ')}`);
        assert.match(stderr, /^synthetic-endpoint: .*allowed/);
        assert.equal(stderr.trim().split('\n').length, 1);
      }),
    );
  });
});

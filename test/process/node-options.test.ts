import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { withoutRefusedOptions } from '../../src/supervisor/threads/sandboxed-thread.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawStdio, type RawStdioServer, toolCallLine } from '../support/raw-stdio.js';
import { providerEnv } from '../support/server.js';
import { symbiBin } from '../support/server-entry.js';
import { suiteFixture, suiteScratch } from '../support/suite-fixture.js';
import { DEFAULT_ANSWER } from '../support/synthetic-endpoint.js';
import { journalsIn } from '../support/journal.js';

// Clients start the server as `node <flags> bin/symbi.js mcp`, or with the flags in NODE_OPTIONS.
// Node.js refuses V8 flags in a worker thread's options (ERR_WORKER_INVALID_EXEC_ARGV), which once
// ended the process at its first thread. Each flag family is given to a real server process here:
// the parse_dsl analysis thread and the invocation threads start, a call is answered, the process
// ends with status 0, and the flags Node.js would not take for a thread are named once on stderr.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

/** V8 flags: Node.js refuses each in a thread's options, so the server must leave it out and say so. */
const V8_FLAGS = ['--max-old-space-size=4096', '--expose-gc', '--stack-size=2000', '--jitless'];
/** A Node.js option that freezes the built-ins (console among them) in every thread that takes it. */
const NODE_FLAGS = ['--frozen-intrinsics'];

interface Session {
  server: RawStdioServer;
  code: number | null;
}

/** Runs parse_dsl and one invoke_agent call on a server started with `nodeArgs` (and `nodeOptions` as NODE_OPTIONS), then closes its input. */
async function session(project: string, endpointUrl: string, nodeArgs: string[], nodeOptions?: string): Promise<Session> {
  const env = { ...providerEnv(endpointUrl), ...(nodeOptions !== undefined ? { NODE_OPTIONS: nodeOptions } : {}) };
  const server = spawnRawStdio(process.execPath, [...nodeArgs, symbiBin, 'mcp', '--project', project], env);
  try {
    await server.send(jsonLine(INITIALIZE));
    await server.waitFor('init', 30_000);
    await server.send(jsonLine(INITIALIZED));
    await server.send(
      jsonLine({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'parse_dsl', arguments: { content: 'agent a {\n  capabilities = ["x"]\n}\n' } },
      }),
    );
    await server.send(toolCallLine(2, 'invoke_agent', { agent: 'assistant', prompt: 'hello' }));
    await server.waitFor(1, 30_000);
    await server.waitFor(2, 30_000);
    return { server, code: await server.end() };
  } catch (error) {
    // A server that died or hangs is the test's failure; it must not keep the test run waiting.
    server.kill('SIGKILL');
    throw error;
  }
}

function assertAnswered({ server, code }: Session): void {
  const stderr = server.stderr();
  assert.equal(code, 0, stderr);
  const parse = server.messages().find((m) => m.id === 1) as { result?: { isError?: boolean } };
  assert.equal(parse.result?.isError, undefined, `parse_dsl answered by its thread: ${server.stdout()}\n${stderr}`);
  const invoke = server.messages().find((m) => m.id === 2) as { result?: { isError?: boolean; content: Array<{ text: string }> } };
  assert.equal(invoke.result?.isError, undefined, `invoke_agent answered by its thread: ${server.stdout()}\n${stderr}`);
  assert.equal(invoke.result?.content[0]?.text, DEFAULT_ANSWER);
}

/** The worker.node_options lines the session wrote. */
const leftOutLines = (server: RawStdioServer): string[] =>
  server
    .stderr()
    .split('\n')
    .filter((line) => line.includes('worker.node_options'));

/** Whether this Node.js starts with `options` in NODE_OPTIONS (some lines refuse some flags there). */
function nodeOptionsAccepted(options: string): boolean {
  return spawnSync(process.execPath, ['-e', ''], { env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: options } }).status === 0;
}

describe('node and V8 flags given to the server process', () => {
  const shared = suiteFixture(FILES);

  for (const flag of V8_FLAGS) {
    it(`node ${flag} bin/symbi.js mcp: the threads start without it, one line names it, every call is answered`, { timeout: 60_000 }, async () => {
      const result = await session(shared.project, shared.endpoint.url, [flag]);
      assertAnswered(result);
      const lines = leftOutLines(result.server);
      assert.equal(lines.length, 1, result.server.stderr());
      assert.ok(lines[0]!.includes(`left_out=${JSON.stringify(flag)}`) || lines[0]!.endsWith(`left_out=${flag}`), lines[0]);
    });
  }

  it(
    `node ${V8_FLAGS.join(' ')} ${NODE_FLAGS.join(' ')} --no-deprecation: one line names every flag left out, and only those`,
    { timeout: 60_000 },
    async () => {
      const result = await session(shared.project, shared.endpoint.url, [...V8_FLAGS, ...NODE_FLAGS, '--no-deprecation']);
      assertAnswered(result);
      const lines = leftOutLines(result.server);
      assert.equal(lines.length, 1, result.server.stderr());
      for (const flag of V8_FLAGS) assert.ok(lines[0]!.includes(flag), `${flag} named: ${lines[0]}`);
      // A Node.js option a thread takes is passed on, not named.
      assert.ok(!lines[0]!.includes('--no-deprecation'), lines[0]);
    },
  );

  for (const flag of NODE_FLAGS) {
    it(`node ${flag} bin/symbi.js mcp: the server starts and every call is answered`, { timeout: 60_000 }, async () => {
      assertAnswered(await session(shared.project, shared.endpoint.url, [flag]));
    });
  }

  for (const flag of [...V8_FLAGS, ...NODE_FLAGS]) {
    it(`NODE_OPTIONS=${flag}: every call is answered`, { timeout: 60_000 }, async (t) => {
      if (!nodeOptionsAccepted(flag)) {
        t.skip(`Node.js ${process.version} does not start with ${flag} in NODE_OPTIONS`);
        return;
      }
      const result = await session(shared.project, shared.endpoint.url, [], flag);
      assertAnswered(result);
      // NODE_OPTIONS never reaches a thread (its environment is empty), so nothing is left out of its options.
      assert.deepEqual(leftOutLines(result.server), []);
    });
  }
});

// A thread that cannot start (Node.js out of threads or memory, say): a module preloaded into the
// server's main thread makes the Worker constructor throw for the invocation pool's threads (piscina's
// worker module), as Node.js does then, and start the others as usual. Each invoke_agent call is
// refused with the reason, the other tools are answered, and the process goes on and exits 0.
const NO_INVOCATION_THREADS = `import threads from 'node:worker_threads';
import { syncBuiltinESMExports } from 'node:module';
if (threads.isMainThread) {
  const RealWorker = threads.Worker;
  threads.Worker = class extends RealWorker {
    constructor(filename, options) {
      if (String(filename).includes('piscina')) throw Object.assign(new Error('no thread can start here (test)'), { code: 'ERR_WORKER_INIT_FAILED' });
      super(filename, options);
    }
  };
  syncBuiltinESMExports();
}
`;

describe('a worker thread that cannot start', () => {
  const shared = suiteFixture(FILES);
  const scratch = suiteScratch('symbi-no-threads-');

  it('refuses each invoke_agent call with the reason, answers the other tools, and exits 0', { timeout: 60_000 }, async () => {
    const preload = path.join(scratch(), 'no-invocation-threads.mjs');
    fs.writeFileSync(preload, NO_INVOCATION_THREADS);
    const server = spawnRawStdio(process.execPath, ['--import', preload, symbiBin, 'mcp', '--project', shared.project], providerEnv(shared.endpoint.url));
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init', 30_000);
      await server.send(jsonLine(INITIALIZED));
      const call = toolCallLine;
      await server.send(
        call(1, 'invoke_agent', { agent: 'assistant', prompt: 'hello' }) +
          call(2, 'parse_dsl', { content: 'agent a {\n}\n' }) +
          call(3, 'invoke_agent', { agent: 'assistant', prompt: 'again' }),
      );
      const answers = new Map<number, { isError?: boolean; text: string }>();
      for (const id of [1, 2, 3]) {
        const answer = (await server.waitFor(id, 30_000)) as { result?: { isError?: boolean; content: Array<{ text: string }> } };
        answers.set(id, { isError: answer.result?.isError, text: answer.result?.content[0]?.text ?? JSON.stringify(answer) });
      }
      for (const id of [1, 3]) {
        assert.equal(answers.get(id)!.isError, true, answers.get(id)!.text);
        assert.equal(answers.get(id)!.text, 'invoke_agent refused: no worker thread could start: no thread can start here (test); the call was not started');
      }
      assert.equal(answers.get(2)!.isError, undefined, answers.get(2)!.text);
      assert.match(server.stderr(), /warn invoke\.refused: invoke_agent refused: no worker thread could start/);
      assert.equal(await server.end(), 0, server.stderr());
      assert.deepEqual(journalsIn(shared.project), [], 'no run started, so no journal');
    } finally {
      // Ended already when the test passed; a failed one must not leave it running.
      server.kill('SIGKILL');
    }
  });
});

describe('the options left out of a thread, from the error Node.js gives', () => {
  const OWN = ['--no-experimental-require-module', '--import', 'file:///sandbox.js'];

  it('leaves out each option Node.js named, with its separate value, and keeps the rest in order', () => {
    const argv = [...OWN, '--title', 'server', '--conditions', 'dev', '--max-old-space-size=4096', '--no-deprecation'];
    const { kept, leftOut } = withoutRefusedOptions(argv, 'Initiated Worker with invalid execArgv flags: --title, --max-old-space-size=4096');
    assert.deepEqual(kept, [...OWN, '--conditions', 'dev', '--no-deprecation']);
    assert.deepEqual(leftOut, ['--title', 'server', '--max-old-space-size=4096']);
  });

  it('leaves out every option of the process, keeping the sandbox’s own, when the message names none of them', () => {
    const argv = [...OWN, '--expose-gc', '--no-deprecation'];
    const { kept, leftOut } = withoutRefusedOptions(argv, 'worker options refused');
    assert.deepEqual(kept, OWN);
    assert.deepEqual(leftOut, ['--expose-gc', '--no-deprecation']);
  });
});

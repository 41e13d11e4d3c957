import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { WORKER_RESOURCE_LIMITS } from '../../src/supervisor/threads/invocation-pool.js';
import { threadExecArgv } from '../../src/supervisor/threads/sandboxed-thread.js';
import { makeProject, removeProject } from '../support/project.js';
import { suiteFixture } from '../support/suite-fixture.js';
import { providerEnv } from '../support/server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey } from '../support/journal.js';
import { jsonLine, spawnInitializedServer, toolCallLine, type RawStdioServer } from '../support/raw-stdio.js';
import { waitFor } from '../support/wait-for.js';
import { repoRoot } from '../support/server-entry.js';

// Each worker thread is a sandbox: a heap limit it cannot pass without ending
// only itself, a standard output that never reaches the MCP channel, and an
// environment without the supervisor's variables. Each case drives a real
// `symbi mcp` over raw stdio with a test-only SYMBI_FAULT_INJECTION mode that
// makes a run misbehave inside its worker.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };
const API_KEY = 'sk-test-not-a-real-key';

interface RpcMessage {
  jsonrpc?: string;
  id?: number;
  method?: string;
  result?: { isError?: boolean; content: { text: string }[]; structuredContent?: { audit: { run_id: string; path: string; public_key: string } } };
  error?: unknown;
}

// Worker faults take a while on a loaded machine; every wait here allows for that.
const WAIT_MS = 180_000;

function invoke(server: RawStdioServer, id: number, prompt: string): void {
  server
    .send(jsonLine({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'invoke_agent', arguments: { agent: 'assistant', prompt } } }))
    .catch(() => undefined);
}

function callTool(server: RawStdioServer, id: number, name: string, args: Record<string, unknown>): void {
  server.send(toolCallLine(id, name, args)).catch(() => undefined);
}

// A library preloaded into the server process (`node --require`, as APM agents are installed)
// runs in every worker thread: test/fixtures/stdout-attack-preload.cjs tries every route to
// standard output from each one, when the thread starts and again once it works.
const ATTACK_PRELOAD = path.join(repoRoot, 'test', 'fixtures', 'stdout-attack-preload.cjs');
/** Runs the server as `node --require <preload> <symbi> ...`. */
const WITH_ATTACK_PRELOAD = ['sh', '-c', `exec "$0" --require '${ATTACK_PRELOAD.replace(/'/g, `'\\''`)}' "$@"`];

/** Each kind of thread the server starts, and a request (its id returned) that puts one of them to work. */
const THREAD_KINDS = [
  { kind: 'invocation', drive: (server: RawStdioServer, id: number) => (invoke(server, id, 'hello'), id) },
  { kind: 'analysis', drive: (server: RawStdioServer, id: number) => (callTool(server, id, 'parse_dsl', { content: FILES['agents/assistant.symbi'] }), id) },
] as const;

const CAPTURED_AT_LOAD = ['console.log at load', 'process.stdout.write at load', 'fs.writeSync(1) at load', 'fs.writeFileSync(1) at load'];
const CAPTURED_AT_WORK = [
  'console.log at work',
  'fs.writeFileSync(1, string)',
  'fs.writeFileSync(1, buffer)',
  'fs.appendFileSync(1)',
  'named writeFileSync(1)',
  'fs.writevSync(1)',
  'fs.writeFileSync(/dev/stdout)',
  'fs.appendFileSync(/proc/self/fd/1)',
  'fs.writeFile(1)',
  'fs.appendFile(/dev/fd/1)',
  'fs.promises.writeFile(/dev/stdout)',
  'named appendFile(/proc/<pid>/fd/1)',
];
const REFUSED = [
  'openSync(/dev/stdout)',
  'openSync(/proc/self/fd/1)',
  'open(/dev/fd/1)',
  'promises.open(/proc/thread-self/fd/1)',
  'createWriteStream(/dev/stdout)',
  'copyFileSync(file, /dev/stdout)',
  'closeSync(1)',
  'new net.Socket({ fd: 1 })',
  'net.Socket({ fd: 0 })',
  'new tty.WriteStream(1)',
  'spawnSync inherit',
  'execSync with stdout 1',
  'spawn inherit',
  'fork default stdio',
  'named import net.Socket({ fd: 1 })',
];
const escaped = (text: string) => text.replace(/[().<>/{}]/g, '\\$&');

/** The answer to request `id`; every complete line on standard output so far must parse as JSON. */
async function result(server: RawStdioServer, id: number): Promise<RpcMessage> {
  const answer = (await server.waitFor(id, WAIT_MS)) as RpcMessage;
  for (const line of server.stdout().split('\n').slice(0, -1)) JSON.parse(line);
  return answer;
}

describe('sandboxed worker threads', () => {
  const shared = suiteFixture();

  it('keeps a worker’s console.log, process.stdout.write and fs.writeSync(1) off standard output and says them, capped, on stderr', async () => {
    const project = makeProject(FILES);
    const server = spawnInitializedServer(project, { env: providerEnv(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-stray-output' }) });
    try {
      invoke(server, 1, 'print things [[fault:worker-stdout]]');
      const first = await result(server, 1);
      assert.equal(first.result?.isError, undefined, JSON.stringify(first));
      invoke(server, 2, 'and again, quietly');
      assert.equal((await result(server, 2)).result?.isError, undefined);
      await waitFor(
        'the worker output on stderr',
        () => (server.stderr().includes('further standard output of this worker thread is dropped') ? true : undefined),
        WAIT_MS,
      );
      assert.equal(await server.end(), 0);

      // The client saw JSON-RPC and nothing else.
      const lines = server
        .stdout()
        .split('\n')
        .filter((l) => l.length > 0);
      for (const line of lines) assert.equal((JSON.parse(line) as RpcMessage).jsonrpc, '2.0', line);
      assert.ok(!server.stdout().includes('stray'), 'no stray output on stdout');

      const stderr = server.stderr();
      for (const expected of [
        'stray console.log from a worker',
        'stray console.info from a worker',
        'stray process.stdout.write from a worker',
        'stray fs.writeSync(1) from a worker',
      ]) {
        assert.match(stderr, new RegExp(`worker thread wrote to standard output.*${expected.replace(/[().]/g, '\\$&')}`), expected);
      }
      // Never the provider key, even when a library prints it.
      assert.ok(!stderr.includes(API_KEY), 'the provider key is redacted');
      assert.match(stderr, /the provider key \[redacted\]/);
      // Capped: 100 lines per thread, each cut at 500 characters.
      const workerLines = stderr.split('\n').filter((l) => l.includes('worker thread wrote to standard output'));
      assert.ok(workerLines.length <= 101, `${workerLines.length} worker lines`);
      assert.ok(
        workerLines.every((l) => l.length < 800),
        'long lines are cut',
      );
      assert.ok(stderr.includes('(cut)'));
    } finally {
      server.kill('SIGKILL');
      removeProject(project);
    }
  });

  for (const { kind, drive } of THREAD_KINDS) {
    it(`keeps a preloaded library's every route to standard output off it in the ${kind} thread: writes at load and at work are captured, opens, copies and closes refused`, async () => {
      const project = makeProject(FILES);
      const server = spawnInitializedServer(project, { env: providerEnv(shared.endpoint.url), launcher: WITH_ATTACK_PRELOAD });
      const fromThisKind = (route: string) => new RegExp(`worker thread wrote to standard output.* thread=${kind} line="stray ${escaped(route)} from a worker`);
      try {
        const answer = await result(server, drive(server, 1));
        assert.equal(answer.result?.isError, undefined, JSON.stringify(answer));
        await waitFor(
          `every route reported from the ${kind} thread`,
          () =>
            [...CAPTURED_AT_LOAD, ...CAPTURED_AT_WORK].every((route) => fromThisKind(route).test(server.stderr())) &&
            REFUSED.every((route) => server.stderr().includes(`route ${route}:`))
              ? true
              : undefined,
          WAIT_MS,
        );
        // Descriptor 1 still works for the supervisor: a second request is answered.
        assert.equal((await result(server, drive(server, 2))).result?.isError, undefined);
        assert.equal(await server.end(), 0, `the server did not exit 0; its standard error ends: ${server.stderr().slice(-3000)}`);

        for (const line of server
          .stdout()
          .split('\n')
          .filter((l) => l.length > 0))
          assert.equal((JSON.parse(line) as RpcMessage).jsonrpc, '2.0', line);
        assert.ok(!server.stdout().includes('stray'), `no stray output on stdout: ${server.stdout()}`);
        const stderr = server.stderr();
        for (const route of REFUSED) assert.match(stderr, new RegExp(`route ${escaped(route)}: refused \\(EPERM\\)`), route);
        // Every thread the preload ran in saw an empty environment: the thread under test at least (its
        // report comes before the routes waited for above); the other kind's, when it started in time.
        const environments = [...stderr.matchAll(/preload attack: environment names: (.*)/g)].map((m) => m[1]);
        assert.ok(environments.length >= 1, `the preload reported from the ${kind} thread: ${environments.length} reports`);
        for (const names of environments) assert.equal(names, '[]');
      } finally {
        server.kill('SIGKILL');
        removeProject(project);
      }
    });
  }

  it('lets a thread still loading its modules finish before it is stopped at shutdown, and exits 0', { timeout: 60_000 }, async () => {
    const project = makeProject(FILES);
    const server = spawnInitializedServer(project, { env: providerEnv(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-slow-load' }) });
    const marks = path.join(os.tmpdir(), `symbi-slow-load-${server.pid}`);
    const threads = (suffix: string): string[] =>
      fs.existsSync(marks)
        ? fs
            .readdirSync(marks)
            .filter((f) => f.endsWith(suffix))
            .map((f) => f.slice(0, -suffix.length))
            .sort()
        : [];
    try {
      // The invocation pool starts a thread once the client has initialized; the client leaves while its task module loads.
      await waitFor('a thread loading its task module', () => (threads('.began').length > 0 ? true : undefined), WAIT_MS);
      assert.deepEqual(threads('.finished'), [], 'the client leaves while the thread is still loading');
      assert.equal(await server.end(), 0, `the server did not exit 0; its standard error ends: ${server.stderr().slice(-3000)}`);
      assert.deepEqual(threads('.finished'), threads('.began'), 'every thread that began loading finished before it was stopped');
    } finally {
      server.kill('SIGKILL');
      removeProject(project);
      fs.rmSync(marks, { recursive: true, force: true });
    }
  });

  it('keeps a library preloaded through NODE_OPTIONS out of every thread: a thread reads NODE_OPTIONS from its own, empty, environment', async () => {
    const project = makeProject(FILES);
    const server = spawnInitializedServer(project, { env: providerEnv(shared.endpoint.url, { NODE_OPTIONS: `--require ${JSON.stringify(ATTACK_PRELOAD)}` }) });
    try {
      for (const [i, { drive }] of THREAD_KINDS.entries()) {
        const answer = await result(server, drive(server, i + 1));
        assert.equal(answer.result?.isError, undefined, JSON.stringify(answer));
      }
      assert.equal(await server.end(), 0);
      for (const line of server
        .stdout()
        .split('\n')
        .filter((l) => l.length > 0))
        assert.equal((JSON.parse(line) as RpcMessage).jsonrpc, '2.0', line);
      // The preload acts in worker threads only, and never ran in one.
      assert.ok(!/stray|preload attack/.test(server.stderr()), server.stderr());
    } finally {
      server.kill('SIGKILL');
      removeProject(project);
    }
  });

  it('gives a worker none of the supervisor’s environment: no unrelated secret, no provider key', async () => {
    const project = makeProject(FILES);
    const env = providerEnv(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-report-environment', UNRELATED_IDE_SECRET: 'hunter2-from-the-ide' });
    const server = spawnInitializedServer(project, { env });
    try {
      invoke(server, 1, 'what can you see [[fault:worker-env]]');
      const answer = await result(server, 1);
      // The run works: the provider configuration reached the worker as data.
      assert.equal(answer.result?.isError, undefined, JSON.stringify(answer));
      const report = await waitFor('the environment report', () => /worker environment names: (\[.*\])/.exec(server.stderr())?.[1], WAIT_MS);
      const names = JSON.parse(report) as string[];
      assert.ok(!names.includes('UNRELATED_IDE_SECRET'), report);
      assert.ok(!names.includes('OPENAI_API_KEY'), report);
      assert.deepEqual(names, [], 'a worker sees no environment variable at all');
      assert.ok(!server.stderr().includes('hunter2'));
      assert.equal(await server.end(), 0);
    } finally {
      server.kill('SIGKILL');
      removeProject(project);
    }
  });

  it('survives a worker that runs past its heap limit: every journal verifies and the next invocation is answered', async () => {
    const project = makeProject(FILES);
    const server = spawnInitializedServer(project, { env: providerEnv(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-out-of-memory' }) });
    try {
      // Runs waiting on the provider on every thread, one of which is about to run out of memory.
      const seen = shared.endpoint.requests.length;
      for (let id = 1; id <= 6; id += 1) invoke(server, id, `waiting ${id} [[hold]]`);
      await shared.endpoint.waitForRequests(seen + 6);
      invoke(server, 10, 'allocate [[fault:worker-oom]]');
      const oom = await result(server, 10);
      assert.equal(oom.result?.isError, true, JSON.stringify(oom));
      assert.match(oom.result.content[0]!.text, /worker running this invocation failed: .*memory limit/);
      // The limit hit is the pool's, not V8's default (about 2 to 4 GiB here).
      const limit = Number(/worker heap limit (\d+) MiB/.exec(server.stderr())?.[1]);
      const { maxOldGenerationSizeMb, maxYoungGenerationSizeMb } = WORKER_RESOURCE_LIMITS;
      assert.ok(limit >= maxOldGenerationSizeMb && limit <= maxOldGenerationSizeMb + maxYoungGenerationSizeMb + 16, `heap limit ${limit} MiB`);
      shared.endpoint.releaseAll();
      const waiting = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => result(server, id)));
      // Runs that shared the thread ended with it; the others completed.
      const failed = waiting.filter((m) => m.result?.isError === true);
      for (const m of failed) assert.match(m.result!.content[0]!.text, /worker running this invocation failed: .*memory limit/);
      assert.ok(failed.length < waiting.length, 'runs on the other thread completed');

      // A replacement thread serves the next invocation.
      invoke(server, 20, 'after the out-of-memory');
      const next = await result(server, 20);
      assert.equal(next.result?.isError, undefined, JSON.stringify(next));
      assert.equal(await server.end(), 0);

      const key = projectPublicKey(project);
      const journals = journalsIn(project);
      assert.equal(journals.length, 8);
      for (const file of journals) {
        // A run that ended with its thread after its request left needs reconciliation (exit 2).
        assertCompleteJournal(file, key);
      }
    } finally {
      server.kill('SIGKILL');
      shared.endpoint.releaseAll();
      removeProject(project);
    }
  });
});

describe('one way to start a thread', () => {
  // Every thread gets the whole sandbox because every thread is made by src/supervisor/threads/sandboxed-thread.ts.
  const FACTORY = 'src/supervisor/threads/sandboxed-thread.ts';
  // `new Worker(`, `new Piscina(`, `new worker_threads.Worker<...>(`, across line breaks and comments-free spacing.
  const THREAD_CONSTRUCTION = /\bnew\s+(?:[\w$]+\s*\.\s*)*(Worker|Piscina)\s*[(<]/g;

  function sourceFiles(dir: string): string[] {
    return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(rel);
      return /\.(?:[cm]?ts|[cm]?js)$/.test(entry.name) ? [rel] : [];
    });
  }

  it(`finds every new Worker / new Piscina in src/ inside ${FACTORY}`, () => {
    const found = sourceFiles('src').flatMap((file) =>
      [...fs.readFileSync(path.join(repoRoot, file), 'utf8').matchAll(THREAD_CONSTRUCTION)].map((m) => ({ file, what: m[1] })),
    );
    const outside = found.filter((f) => f.file !== FACTORY);
    assert.deepEqual(outside, [], `threads started outside ${FACTORY}: ${outside.map((f) => `${f.file} (new ${f.what})`).join(', ')}`);
    // The scan sees the factory's own two constructions, so it is looking at the right thing.
    assert.deepEqual(found.map((f) => f.what).sort(), ['Piscina', 'Worker']);
  });

  it('starts each thread with require(esm) off and its sandbox module first, then the process’s node options, each --require preload as an --import of the file it names', () => {
    const fixture = path.relative(process.cwd(), ATTACK_PRELOAD);
    const argv = threadExecArgv(['--require', `./${fixture}`, '--max-semi-space-size=4', `--require=${ATTACK_PRELOAD}`, '-r', 'node:fs', '--import', 'tsx']);
    // piscina then loads the task module with import(), never require(esm) (sandboxed-thread.ts says why).
    assert.equal(argv[0], '--no-experimental-require-module');
    const sandbox = argv.slice(1, 3);
    assert.equal(sandbox[0], '--import');
    assert.match(sandbox[1]!, /^file:.*\/worker\/thread-sandbox\.js$/);
    const preload = pathToFileURL(ATTACK_PRELOAD).href;
    assert.deepEqual(argv.slice(3), ['--import', preload, '--max-semi-space-size=4', '--import', preload, '--import', 'node:fs', '--import', 'tsx']);
  });
});

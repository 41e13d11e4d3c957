import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject, removeProject } from '../support/project.js';
import { suiteFixture, suiteScratch } from '../support/suite-fixture.js';
import { providerEnv, serverCommand } from '../support/server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey } from '../support/journal.js';
import { waitFor } from '../support/wait-for.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer, type RawMessage, toolCallLine } from '../support/raw-stdio.js';

// Every request the server read gets exactly one answer, however the session
// ends: standard input closing right after a batch of calls, or SIGTERM while
// calls are still being admitted. Journals of the runs that did start all end
// with their terminal record, and no run starts once shutdown has begun.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

type Answer = RawMessage & {
  id: number | string;
  result?: { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { audit?: { path: string } } };
  error?: { code: number; message: string };
};

const invokeCall = (id: number, prompt: string): string => toolCallLine(id, 'invoke_agent', { agent: 'assistant', prompt });
const listAgents = (id: number): string => toolCallLine(id, 'list_agents', {});

function answersById(messages: RawMessage[]): Map<unknown, Answer[]> {
  const byId = new Map<unknown, Answer[]>();
  for (const m of messages) {
    if (!('id' in m) || 'method' in m || !('result' in m || 'error' in m)) continue;
    byId.set(m.id, [...(byId.get(m.id) ?? []), m as Answer]);
  }
  return byId;
}

/** What an answer to an invoke_agent call says: a result, the end of a run cut short, or a refusal because the server is stopping. */
function kindOf(answer: Answer): 'result' | 'stopped run' | 'refused: stopping' | `error: ${string}` | `tool error: ${string}` {
  if (answer.error !== undefined)
    return /^the server is shutting down \(.*\); the request was not run$/.test(answer.error.message) ? 'refused: stopping' : `error: ${answer.error.message}`;
  const text = answer.result?.content[0]?.text ?? '';
  if (answer.result?.isError !== true) return 'result';
  if (/^invoke_agent failed: the server is shutting down/.test(text) && answer.result.structuredContent?.audit !== undefined) return 'stopped run';
  if (/^invoke_agent refused: the server is shutting down \(.*\); the call was not started$/.test(text) && answer.result.structuredContent === undefined)
    return 'refused: stopping';
  return `tool error: ${text}`;
}

describe('every request read is answered when the session ends', () => {
  const shared = suiteFixture();

  it('answers five invoke_agent calls and a list_agents piped in before standard input closes', async () => {
    const project = makeProject(FILES);
    try {
      const { command, args } = serverCommand(project);
      const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: providerEnv(shared.endpoint.url) });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      // As `printf '...' | symbi mcp` does: the whole batch, then end of input.
      let batch = jsonLine(INITIALIZE) + jsonLine(INITIALIZED);
      for (let id = 1; id <= 5; id++) batch += invokeCall(id, `batch ${id}`);
      batch += listAgents(6);
      child.stdin.end(batch);
      assert.equal(await exited, 0, stderr);

      const byId = answersById(
        stdout
          .split('\n')
          .filter((l) => l.length > 0)
          .map((l) => JSON.parse(l) as RawMessage),
      );
      for (const id of ['init', 1, 2, 3, 4, 5, 6]) assert.equal(byId.get(id)?.length, 1, `exactly one answer to ${id}; stdout: ${stdout}`);
      assert.equal(byId.get(6)![0]!.result?.isError, undefined, 'list_agents answered');
      const key = projectPublicKey(project);
      const journals = journalsIn(project);
      for (const id of [1, 2, 3, 4, 5]) {
        const kind = kindOf(byId.get(id)![0]!);
        assert.ok(['result', 'stopped run', 'refused: stopping'].includes(kind), `call ${id}: ${kind}`);
      }
      const withJournal = [1, 2, 3, 4, 5].filter((id) => byId.get(id)![0]!.result?.structuredContent?.audit !== undefined);
      assert.equal(journals.length, withJournal.length, 'a journal for each run that started, none for a refused call');
      for (const file of journals) assertCompleteJournal(file, key);
    } finally {
      removeProject(project);
    }
  });

  it('answers a call whose run is not over when the grace period ends, once, with an error saying so', async () => {
    const project = makeProject(FILES);
    try {
      const server = spawnRawServer(project, {
        args: ['--shutdown-grace-ms', '0'],
        env: providerEnv(shared.endpoint.url, { SYMBI_FAULT_INJECTION: 'worker-hang-after-request' }),
      });
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init');
      await server.send(jsonLine(INITIALIZED));
      // The worker thread blocks once the request is sent: the run can neither finish nor be cancelled.
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'stuck [[fault:worker-hang]]' }, 'hang'));
      await waitFor('the request_sent progress notice', () => (server.stdout().includes('"request_sent"') ? true : undefined));
      server.kill('SIGTERM');
      assert.equal(await server.exited, 1, server.stderr());
      const answers = answersById(server.messages()).get(1) ?? [];
      assert.equal(answers.length, 1, server.stdout());
      assert.equal(answers[0]!.error?.code, -32000);
      assert.match(answers[0]!.error.message, /^the server is shutting down \(SIGTERM\); no answer was ready within the shutdown grace period of 0 ms$/);
      assert.match(server.stderr(), /not_finalised=1 answered_as_stopping=1/);
    } finally {
      removeProject(project);
    }
  });

  // A closing terminal sends SIGHUP to the servers an IDE's CLI started; Ctrl-C sends SIGINT.
  for (const signal of ['SIGHUP', 'SIGINT'] as const) {
    it(`${signal} with a call in flight at the provider: the call is answered and its journal ends with its terminal record`, async () => {
      const project = makeProject(FILES);
      try {
        const server = spawnRawServer(project, { env: providerEnv(shared.endpoint.url) });
        await server.send(jsonLine(INITIALIZE));
        await server.waitFor('init');
        await server.send(jsonLine(INITIALIZED));
        const before = shared.endpoint.requests.length;
        await server.send(invokeCall(1, `in flight at ${signal} [[hold]]`));
        await shared.endpoint.waitForRequests(before + 1);
        server.kill(signal);
        assert.equal(await server.exited, 0, server.stderr());
        const answers = answersById(server.messages()).get(1) ?? [];
        assert.equal(answers.length, 1, server.stdout());
        assert.equal(kindOf(answers[0]!), 'stopped run', server.stdout());
        assert.match(server.stderr(), new RegExp(` shutdown: shutting down cause=${signal} `));
        const journals = journalsIn(project);
        assert.equal(journals.length, 1);
        assertCompleteJournal(journals[0]!, projectPublicKey(project));
      } finally {
        removeProject(project);
      }
    });
  }

  it('answers every call read when SIGTERM arrives while calls are being admitted, and starts none after', async () => {
    const project = makeProject(FILES);
    try {
      const server = spawnRawServer(project, { env: providerEnv(shared.endpoint.url) });
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init');
      await server.send(jsonLine(INITIALIZED));
      // One run is in flight at the provider, so some calls are running when the signal comes.
      await server.send(invokeCall(1, 'first [[hold]]'));
      await shared.endpoint.waitForRequests(shared.endpoint.requests.length + 1);
      const CALLS = 40;
      let lines = '';
      for (let id = 2; id <= CALLS; id++) lines += id % 10 === 0 ? listAgents(id) : invokeCall(id, `call ${id} [[delay:20]]`);
      await server.send(lines);
      // The batch came in one write, so once one of its calls has started, the server has read them all.
      await waitFor('a call of the batch to start', () => (server.stderr().split('run started').length > 2 ? true : undefined));
      server.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.stderr());

      const byId = answersById(server.messages());
      for (const [id, answers] of byId) assert.equal(answers.length, 1, `one answer to ${String(id)}`);
      // Each call was read (they came in one write, before the signal) and each was answered.
      for (let id = 1; id <= CALLS; id++) {
        const answer = byId.get(id)?.[0];
        assert.ok(answer !== undefined, `call ${id} was answered; stderr: ${server.stderr()}`);
        if (id % 10 === 0) continue;
        const kind = kindOf(answer);
        assert.ok(['result', 'stopped run', 'refused: stopping'].includes(kind), `call ${id}: ${kind}`);
      }
      assert.equal(kindOf(byId.get(1)![0]!), 'stopped run');
      // Runs started only before the stopping line.
      const stderrLines = server.stderr().split('\n');
      const stopping = stderrLines.findIndex((l) => l.includes('stopping: no new request or run is admitted'));
      assert.ok(stopping >= 0, server.stderr());
      const startedAfter = stderrLines.slice(stopping).filter((l) => l.includes('run started'));
      assert.deepEqual(startedAfter, [], 'no run started after shutdown began');
      const key = projectPublicKey(project);
      const journals = journalsIn(project);
      const withJournal = [...byId.values()].filter(([a]) => a!.result?.structuredContent?.audit !== undefined);
      assert.equal(journals.length, withJournal.length);
      for (const file of journals) assertCompleteJournal(file, key);
    } finally {
      removeProject(project);
    }
  });
});

// process.exit can hang forever on Node.js 24 (nodejs/node#54918: a background compile job waits for
// a garbage collection the exiting main thread never makes), so the server ends by emptying its event
// loop. A module preloaded into the server's main thread writes down each process.exit call and the exit.
const EXIT_PROBE = `import fs from 'node:fs';
import { isMainThread } from 'node:worker_threads';
if (isMainThread) {
  const exit = process.exit;
  process.exit = (code) => { fs.appendFileSync(process.env.EXIT_PROBE_FILE, 'process.exit(' + code + ')\\n'); return exit.call(process, code); };
  process.on('exit', (code) => fs.appendFileSync(process.env.EXIT_PROBE_FILE, 'exit ' + code + '\\n'));
}
`;

describe('the server ends by emptying its event loop, not by process.exit', () => {
  const shared = suiteFixture();
  const scratch = suiteScratch('symbi-exit-probe-');

  for (const ending of ['standard input closed', 'SIGTERM'] as const) {
    it(`after a run, ${ending}: exit 0, and process.exit was never called`, { timeout: 60_000 }, async () => {
      const dir = scratch();
      const probe = path.join(dir, 'probe.mjs');
      const record = path.join(dir, 'exits.txt');
      fs.writeFileSync(probe, EXIT_PROBE);
      const project = makeProject(FILES);
      try {
        const { command, args } = serverCommand(project);
        const env = { ...providerEnv(shared.endpoint.url), NODE_OPTIONS: `--import=${probe}`, EXIT_PROBE_FILE: record };
        const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
        // A run first, so the worker threads and Cedar have started and compiled.
        child.stdin.write(jsonLine(INITIALIZE) + jsonLine(INITIALIZED) + invokeCall(1, 'before the end'));
        await waitFor('the answer to the run', () => (stdout.includes('"id":1') ? true : undefined), 30_000);
        if (ending === 'SIGTERM') child.kill('SIGTERM');
        else child.stdin.end();
        const code = await exited;
        assert.equal(code, 0, stderr);
        assert.equal(fs.readFileSync(record, 'utf8'), 'exit 0\n', `the exits the probe saw\n${stderr}`);
      } finally {
        removeProject(project);
      }
    });
  }
});

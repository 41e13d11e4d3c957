import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { startSyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { providerEnv, serverCommand, serverEnv } from '../support/server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey } from '../support/journal.js';
import { INITIALIZE, INITIALIZED, jsonLine, type RawMessage, toolCallLine } from '../support/raw-stdio.js';
import { startInProcessSession } from '../support/in-process-server.js';
import { rawLines } from '../support/op-raw-session.js';
import { refusedMcpArguments } from '../support/op-mcp-arguments.js';
import { waitFor } from '../support/wait-for.js';

// A caller cannot exhaust the server's memory: a client that stops reading standard output
// stalls its own input instead of growing the server (and gets every answer once it reads),
// and invocations beyond the capacity bound are refused at once while every accepted one
// still ends its journal. The full sizes run in scripts/bench/bench-flood.ts.
//
// The stalled reader needs the real stdio pipes of the built server and its memory, so it
// runs a `symbi mcp` process. The capacity bound is the session's logic: served in this
// process (in-process-server.ts) on raw lines, through the same line limiter, message gate
// and request ledger, with the exit code its shutdown steps give. A refused --max-invocations
// is read by the command's own definition in this process (op-mcp-arguments.ts), as
// server-stdio.test.ts reads the other refused options.

const AGENT_TEXT_BYTES = 512 * 1024;
const DSL_CALLS = 160;
const FLOOD_CAPACITY = 8;
const FLOOD_CALLS = 48;
/**
 * The largest texts whose typed request still leaves output tokens in the route's 16,384-token budget
 * (docs/audit.md): a larger request ends MaxTokens before any provider call.
 */
const BIG_TEXT = 5 * 1024;

function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

function bigAgentSource(): string {
  const head = 'agent big {\n}\n';
  const line = `// ${'x'.repeat(1021)}\n`;
  return head + line.repeat(Math.floor((AGENT_TEXT_BYTES - head.length) / line.length));
}

/** Every complete stdout line of the child parsed, as they arrive, while `reading` is on. */
function collectAnswers(child: ChildProcessWithoutNullStreams): { answers: Map<unknown, RawMessage>; waitFor(n: number, timeoutMs: number): Promise<void> } {
  const answers = new Map<unknown, RawMessage>();
  let partial = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const message = JSON.parse(line) as RawMessage;
      if ('id' in message) answers.set(message.id, message);
    }
    for (const waiter of waiters) waiter();
  });
  return {
    answers,
    waitFor: (n, timeoutMs) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${answers.size} of ${n} answers within ${timeoutMs} ms`)), timeoutMs);
        const check = (): void => {
          if (answers.size < n) return;
          clearTimeout(timer);
          resolve();
        };
        waiters.push(check);
        check();
      }),
  };
}

describe('a client that does not read standard output', () => {
  it('stalls its own input while answers wait unread, then gets every answer once it reads', async () => {
    const source = bigAgentSource();
    const project = makeProject({ 'agents/big.symbi': source });
    const { command, args } = serverCommand(project);
    const child = spawn(command, args, { env: serverEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.stdin.on('error', () => undefined);
    try {
      const initialized = new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      child.stdin.write(jsonLine(INITIALIZE));
      await initialized;
      child.stdout.pause();
      child.stdin.write(jsonLine(INITIALIZED));
      // The startup analysis of the big source is done once the serving line is out: only the requests below grow the server now.
      await waitFor('the serving line', () => (stderr.includes('serving MCP on standard input/output') ? true : undefined));
      const before = rssKiB(child.pid!, 'VmRSS');
      // Each request earns an answer of twice the source (text and structuredContent): about 1 MiB.
      let requests = '';
      for (let id = 1; id <= DSL_CALLS; id++) {
        requests += toolCallLine(id, 'get_agent_dsl', { agent: 'big' });
      }
      child.stdin.write(requests);
      // Long enough for an unbounded server to have answered everything into its own memory. A fixed
      // wait on purpose: what is checked is that memory does NOT grow, and an absence has no event to wait for.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const growthMiB = (rssKiB(child.pid!, 'VmHWM') - before) / 1024;
      assert.ok(growthMiB < 64, `peak RSS grew by ${growthMiB.toFixed(1)} MiB while ${DSL_CALLS} answers of about 1 MiB were not read`);

      const reader = collectAnswers(child);
      child.stdout.resume();
      await reader.waitFor(DSL_CALLS, 120_000);
      for (let id = 1; id <= DSL_CALLS; id++) {
        const answer = reader.answers.get(id);
        assert.ok(answer !== undefined, `answer ${id} arrived`);
        assert.equal((answer.result as { content: Array<{ text: string }> }).content[0]!.text, source, `answer ${id} is the whole source`);
      }
    } finally {
      child.kill('SIGKILL');
      removeProject(project);
    }
  });
});

describe('a flood of invocations against a provider that does not answer', () => {
  it('refuses the calls beyond the capacity at once, makes no journal or provider call for them, and completes every accepted journal', async () => {
    const endpoint = await startSyntheticEndpoint({ defaultMode: 'hold' });
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' });
    const server = rawLines(await startInProcessSession(project, { env: providerEnv(endpoint.url), maxInvocations: FLOOD_CAPACITY }));
    try {
      await server.send(jsonLine(INITIALIZE));
      await server.waitFor('init');
      await server.send(jsonLine(INITIALIZED));
      const prompt = 'p'.repeat(BIG_TEXT);
      const systemPrompt = 's'.repeat(BIG_TEXT);
      let lines = '';
      for (let id = 1; id <= FLOOD_CALLS; id++) {
        lines += toolCallLine(id, 'invoke_agent', { agent: 'assistant', prompt, system_prompt: systemPrompt });
      }
      await server.send(lines);

      // The accepted runs hold at the provider; everything else is refused without waiting for them.
      await endpoint.waitForRequests(FLOOD_CAPACITY, 30_000);
      const refused: number[] = [];
      for (let id = FLOOD_CAPACITY + 1; id <= FLOOD_CALLS; id++) {
        const answer = await server.waitFor(id, 30_000);
        const result = answer.result as { isError?: boolean; content: Array<{ text: string }>; structuredContent?: unknown };
        assert.equal(result.isError, true, `call ${id}`);
        const text = result.content[0]!.text;
        assert.match(text, new RegExp(`^invoke_agent refused: the server is at capacity: ${FLOOD_CAPACITY} invocations are already in progress`));
        assert.ok(!text.includes('\n') && text.length < 300, text);
        assert.equal(result.structuredContent, undefined, 'a refusal carries no audit reference');
        refused.push(id);
      }
      assert.equal(refused.length, FLOOD_CALLS - FLOOD_CAPACITY);
      // None of the first calls was answered: they are the ones in progress.
      for (let id = 1; id <= FLOOD_CAPACITY; id++) assert.ok(!server.messages().some((m) => m.id === id), `call ${id} is still in progress`);
      assert.equal(endpoint.requests.length, FLOOD_CAPACITY, 'no provider call for a refused invocation');
      assert.equal(journalsIn(project).length, FLOOD_CAPACITY, 'no journal for a refused invocation');

      // Shutting down cancels the accepted runs; each journal ends with its terminal record.
      assert.equal(await server.end(), 0, server.stderr());
      const journals = journalsIn(project);
      assert.equal(journals.length, FLOOD_CAPACITY);
      for (const journal of journals) assertCompleteJournal(journal, projectPublicKey(project));
      assert.match(server.stderr(), /at capacity/);
      // Each accepted call was answered too (cancelled by the shutdown) before the server exited.
      for (let id = 1; id <= FLOOD_CAPACITY; id++) {
        const answer = server.messages().find((m) => m.id === id);
        assert.ok(answer !== undefined, `call ${id} was answered before exit`);
        assert.match((answer.result as { content: Array<{ text: string }> }).content[0]!.text, /shutting down/);
      }
    } finally {
      await server.end().catch(() => undefined);
      await endpoint.close();
      removeProject(project);
    }
  });

  it('refuses a capacity that is not a whole number from 1 up, naming what is allowed', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n}\n' });
    try {
      for (const bad of ['0', '-1', '1.5', 'many', '99999999999']) {
        const { code, stderr } = await refusedMcpArguments(['--project', project, '--max-invocations', bad]);
        assert.equal(code, 2, bad);
        assert.match(stderr, /^symbi mcp: --max-invocations "[^"]*" is not valid; use a whole number from 1 to \d+\n$/, stderr);
      }
    } finally {
      removeProject(project);
    }
  });
});

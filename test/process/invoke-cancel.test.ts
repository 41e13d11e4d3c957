import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { suiteFixture } from '../support/suite-fixture.js';
import { makeProject, removeProject } from '../support/project.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { auditOf, providerEnv } from '../support/server.js';
import { startInProcessServer, startInProcessSession, type InProcessOptions, type InProcessServer } from '../support/in-process-server.js';
import { assertCompleteJournal, eventNames, inspect, inspectWithCli, journalsIn, projectPublicKey, readJournal, runIdOf } from '../support/journal.js';
import { ROUTE_SEQUENCES } from '../support/symbiont-route.js';
import { readAsSymbiont } from '../support/symbiont-reader.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnInitializedServer, toolCallLine } from '../support/raw-stdio.js';
import { waitFor } from '../support/wait-for.js';

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

// Cancellation, progress and the drain when standard input closes are the session's logic: those
// tests serve the session in this process (in-process-server.ts), on the same MCP transport over
// in-memory streams, with the exit code its shutdown steps give. So do the runs an owner ends
// beside a worker thread stuck for good: the session's shutdown stops the pool's threads, a stuck
// one included, so the test process is left with none. Signals, the exit they cause (a process
// with a thread that never returns still exits) and a process killed mid-run need a process of
// their own.

function terminalOf(file: string): { reason: unknown } | undefined {
  if (!fs.existsSync(file)) return undefined;
  const records = readJournal(file);
  const last = records[records.length - 1]?.payload.entry.event;
  return last?.Terminated as { reason: unknown } | undefined;
}

describe('cancellation', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: InProcessServer;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(FILES);
    server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
  });
  after(async () => {
    endpoint.releaseAll();
    await server.close();
    await endpoint.close();
    removeProject(project);
  });

  // `raceWithCompletion`: the cancel aims at a window so short that on a loaded
  // machine the run may already have answered; then the result stands and only
  // the journal is checked.
  // `options` are the SDK client's request options (a `timeout` of its own cancels like an abort).
  async function cancelledRun(
    prompt: string,
    cancelWhen: (controller: AbortController) => Promise<void>,
    raceWithCompletion = false,
    options: RequestOptions = {},
  ) {
    const known = new Set(journalsIn(project));
    const controller = new AbortController();
    const call = server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt } }, undefined, {
      signal: controller.signal,
      ...options,
    });
    const settled = call.then(
      () => 'resolved',
      () => 'rejected',
    );
    let answeredFirst = false;
    void settled.then((outcome) => (answeredFirst = outcome === 'resolved'));
    await cancelWhen(controller);
    if (!(raceWithCompletion && answeredFirst)) assert.equal(await settled, 'rejected', 'a cancelled request gets no result');
    const journal = await waitFor('the new journal', () => journalsIn(project).find((f) => !known.has(f)));
    const terminal = await waitFor('the terminal record', () => terminalOf(journal));
    return { journal, terminal };
  }

  it('cancels a request in flight: the provider connection is closed and the journal ends with an Error', async () => {
    const seen = endpoint.requests.length;
    const { journal, terminal } = await cancelledRun('wait [[hold]]', async (c) => {
      await endpoint.waitForRequests(seen + 1);
      c.abort('stop');
    });
    assert.match(JSON.stringify(terminal.reason), /Error.*cancelled/);
    // As Symbiont's route ends a call cancelled in flight: no finish, no settlement.
    assert.deepEqual(readAsSymbiont(journal), [...ROUTE_SEQUENCES.cancelledDuringCall]);
    const request = endpoint.requests[seen]!;
    await waitFor('the endpoint to see the connection close', () => (request.closedEarly ? true : undefined));
    await waitFor('no open provider connections', () => (endpoint.openConnections() === 0 ? true : undefined));
    // Complete, but the request had left: its effect is unknown and needs reconciliation.
    const runId = runIdOf(journal);
    const { status, report } = inspect(journal, runId, projectPublicKey(project));
    assert.equal(status, 2, JSON.stringify(report));
    assert.equal(report.journal_complete, true);
    assert.equal(report.requires_reconciliation, true);
    // The reservation and the call, both unknown.
    assert.deepEqual(
      (report.effects as { outcome: string }[]).map((e) => e.outcome),
      ['unknown', 'unknown'],
    );
  });

  // A client whose request clock is shorter than the run, but restarts on progress (the MCP SDK's
  // resetTimeoutOnProgress), still gets the answer: while the provider holds the request, the server
  // repeats the phase every PROGRESS_HEARTBEAT_MS (5 s), so the 7 s clock never runs out.
  it('keeps a client that restarts its clock on progress waiting past its timeout, with the phase only', async () => {
    const seen = endpoint.requests.length;
    const heard: { progress: number; message?: string }[] = [];
    const startedAt = Date.now();
    const call = server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'slow [[hold]]' } }, undefined, {
      timeout: 7_000,
      resetTimeoutOnProgress: true,
      onprogress: (notice) => heard.push(notice),
    });
    await endpoint.waitForRequests(seen + 1);
    // Two repeats of the provider phase: the run has outlived the client's 7 s clock.
    await waitFor(
      'two heartbeats while the provider holds the request',
      () => (heard.filter((n) => n.message === 'request_sent').length >= 3 ? true : undefined),
      30_000,
    );
    assert.ok(Date.now() - startedAt > 7_000, 'the run outlived the client clock');
    endpoint.releaseAll();
    const result = await call;
    assert.equal(result.isError, undefined, JSON.stringify(result.content));
    assert.equal(auditOf(result).response, 'Hello from the synthetic endpoint.');
    const values = heard.map((n) => n.progress);
    assert.deepEqual(
      values,
      [...values].sort((a, b) => a - b),
      'progress only increases',
    );
    assert.equal(new Set(values).size, values.length, 'and never repeats a value');
    assert.ok(
      heard.every((n) => /^[a-z_]+$/.test(n.message ?? '')),
      'phase names only, never text',
    );
  });

  it('a client that gives up at its own timeout cancels the run: the journal still ends with its terminal record', async () => {
    const seen = endpoint.requests.length;
    const { journal, terminal } = await cancelledRun(
      'wait [[hold]]',
      async () => {
        await endpoint.waitForRequests(seen + 1);
      },
      false,
      { timeout: 1_500 },
    );
    assert.match(JSON.stringify(terminal.reason), /Error.*cancelled/);
    assert.deepEqual(readAsSymbiont(journal), [...ROUTE_SEQUENCES.cancelledDuringCall]);
    await waitFor('the endpoint to see the connection close', () => (endpoint.requests[seen]!.closedEarly ? true : undefined));
    assert.equal(inspect(journal, runIdOf(journal), projectPublicKey(project)).report.journal_complete, true);
  });

  it('cancels while the response body is being read', async () => {
    const seen = endpoint.requests.length;
    const { journal, terminal } = await cancelledRun('slowly [[drip:150]]', async (c) => {
      await endpoint.waitForRequests(seen + 1);
      // A piece of the body after the first (150 ms apart): the headers have arrived and the body is being read.
      const first = await waitFor('the first piece of the body', () =>
        endpoint.requests[seen]!.bytesSent > 0 ? endpoint.requests[seen]!.bytesSent : undefined,
      );
      await waitFor('a later piece of the body', () => (endpoint.requests[seen]!.bytesSent > first ? true : undefined));
      c.abort('stop');
    });
    assert.match(JSON.stringify(terminal.reason), /cancelled/);
    // The call had not finished when the cancel came: no finish is recorded.
    assert.deepEqual(readAsSymbiont(journal), [...ROUTE_SEQUENCES.cancelledDuringCall]);
    const request = endpoint.requests[seen]!;
    await waitFor('the endpoint to see the connection close', () => (request.closedEarly ? true : undefined));
    // The auditor's command itself, as a process: a journal that needs reconciliation exits 2.
    assert.equal(inspectWithCli(journal, runIdOf(journal), projectPublicKey(project)).status, 2);
  });

  it('cancels while the journal opens (cancel sent right after the call)', async () => {
    const { journal, terminal } = await cancelledRun('[[hold]]', async (c) => {
      c.abort('stop');
    });
    assert.match(JSON.stringify(terminal.reason), /cancelled/);
    assertCompleteJournal(journal, projectPublicKey(project));
    endpoint.releaseAll();
  });

  it('cancels around policy evaluation: the journal is still complete and verifies', async () => {
    const { journal } = await cancelledRun(
      'hello',
      async (c) => {
        // Cancel the moment the response is reported received; the policy runs next.
        await new Promise<void>((resolve) => {
          const poll = setInterval(() => {
            const files = journalsIn(project);
            for (const f of files) {
              if (eventNames(readJournal(f)).includes('DirectInferenceFinished') && !terminalOf(f)) {
                clearInterval(poll);
                resolve();
                return;
              }
            }
          }, 1);
          setTimeout(() => {
            clearInterval(poll);
            resolve();
          }, 2000);
        });
        c.abort('stop');
      },
      true,
    );
    assertCompleteJournal(journal, projectPublicKey(project));
  });

  it('treats cancels of unknown, finished and repeated requests as harmless', async () => {
    await server.client.notification({ method: 'notifications/cancelled', params: { requestId: 987654, reason: 'unknown' } });
    const done = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hi' } });
    assert.equal(done.isError, undefined);
    await server.client.notification({ method: 'notifications/cancelled', params: { requestId: 1, reason: 'finished long ago' } });
    await server.client.notification({ method: 'notifications/cancelled', params: { requestId: 1, reason: 'twice' } });
    const again = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'still there?' } });
    assert.equal(again.isError, undefined);
  });

  it('logs one line per cancellation with the run id and the cancel-to-terminal time', () => {
    assert.match(server.stderr(), /run cancelled.*[0-9a-f-]{36}.*cancel_to_terminal_ms/s);
  });

  it('loses no journal in a short stress run (100 invocations, half cancelled at random moments)', async () => {
    const known = new Set(journalsIn(project));
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) {
      const controller = new AbortController();
      const delay = Math.floor(Math.random() * 40);
      calls.push(
        server.client
          .callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `n${i} [[delay:${delay}]]` } }, undefined, {
            signal: controller.signal,
          })
          .catch(() => undefined),
      );
      if (i % 2 === 0) setTimeout(() => controller.abort('stress'), Math.floor(Math.random() * 50));
    }
    await Promise.all(calls);
    const created = await waitFor('100 complete journals', () => {
      const fresh = journalsIn(project).filter((f) => !known.has(f));
      return fresh.length === 100 && fresh.every((f) => terminalOf(f) !== undefined) ? fresh : undefined;
    });
    const key = projectPublicKey(project);
    for (const file of created) assertCompleteJournal(file, key);
    await waitFor('no open provider connections', () => (endpoint.openConnections() === 0 ? true : undefined));
  });
});

describe('shutdown and process loss', () => {
  const shared = suiteFixture();

  const spawnServer = (project: string, args: string[] = [], extraEnv: Record<string, string> = {}) =>
    spawnInitializedServer(project, { args, env: providerEnv(shared.endpoint.url, extraEnv) });

  /**
   * The session in process, initialized, read and written as raw lines as spawnServer's are: what
   * it wrote (`messages`), a wait for the answer to `id`, and `end`, which closes its input as a
   * client closing standard input does and settles with the exit code its shutdown steps give.
   */
  async function sessionOnWire(project: string, extraEnv: Record<string, string> = {}, options: Omit<InProcessOptions, 'env'> = {}) {
    const session = await startInProcessSession(project, { env: providerEnv(shared.endpoint.url, extraEnv), ...options });
    let written = '';
    session.fromServer.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
    // Complete lines only: the last piece may be a line still being written.
    const messages = (): { id?: unknown }[] =>
      written
        .split('\n')
        .slice(0, -1)
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as { id?: unknown });
    const send = async (text: string): Promise<void> => {
      session.toServer.write(text);
    };
    await send(jsonLine(INITIALIZE) + jsonLine(INITIALIZED));
    return {
      send,
      /** Everything written to the session's output so far, as it came. */
      stdout: () => written,
      messages,
      waitFor: (id: number): Promise<unknown> => waitFor(`the answer to ${id}`, () => messages().find((m) => m.id === id && ('result' in m || 'error' in m))),
      stderr: session.stderr,
      end: async (): Promise<number> => {
        session.toServer.end();
        return session.shutdown(`session closed: ${await session.closed}`);
      },
    };
  }

  it('reports the four progress phases before the result, without model text (checked on the wire)', async () => {
    // Checked on the session's raw output: the SDK client runs notification handlers a tick later
    // than responses, so a client-side counter could miss the last notice.
    const project = makeProject(FILES);
    try {
      const server = await sessionOnWire(project);
      await server.send(toolCallLine(7, 'invoke_agent', { agent: 'assistant', prompt: 'hi' }, 'p7'));
      const messages = await waitFor('the result', () => {
        const parsed = server.messages() as Array<{ id?: number; method?: string; params?: { progressToken?: string; message?: string; progress?: number } }>;
        return parsed.some((m) => m.id === 7) ? parsed : undefined;
      });
      const resultIndex = messages.findIndex((m) => m.id === 7);
      const progress = messages.filter((m) => m.method === 'notifications/progress' && m.params?.progressToken === 'p7');
      assert.deepEqual(
        progress.map((m) => m.params?.message),
        ['journal_opened', 'request_sent', 'response_received', 'policy_evaluated'],
      );
      assert.deepEqual(
        progress.map((m) => m.params?.progress),
        [1, 2, 3, 4],
      );
      assert.ok(progress.every((m) => messages.indexOf(m) < resultIndex));
      assert.ok(!JSON.stringify(progress).includes('Hello from the synthetic endpoint'));

      // A call without a progressToken gets its result and no progress notices at all.
      await server.send(toolCallLine(8, 'invoke_agent', { agent: 'assistant', prompt: 'hi' }));
      const all = await waitFor('the second result', () => {
        const parsed = server.messages() as Array<{ id?: number; method?: string }>;
        return parsed.some((m) => m.id === 8) ? parsed : undefined;
      });
      assert.equal(all.filter((m) => m.method === 'notifications/progress').length, 4, 'only the first call reported progress');
      assert.equal(await server.end(), 0);
    } finally {
      removeProject(project);
    }
  });

  it('finalises 20 waiting runs when standard input closes, then exits 0', async () => {
    const project = makeProject(FILES);
    try {
      const seen = shared.endpoint.requests.length;
      const server = await sessionOnWire(project);
      for (let i = 1; i <= 20; i++) {
        await server.send(toolCallLine(i, 'invoke_agent', { agent: 'assistant', prompt: `[[hold]] ${i}` }));
      }
      await shared.endpoint.waitForRequests(seen + 20, 15_000);
      const code = await server.end();
      assert.equal(code, 0, server.stderr());
      const journals = journalsIn(project);
      assert.equal(journals.length, 20);
      const key = projectPublicKey(project);
      for (const file of journals) {
        assertCompleteJournal(file, key);
        // Symbiont's words for a cancel, whoever cancelled (the caller sees "shutting down").
        assert.deepEqual(terminalOf(file)?.reason, { Error: { message: 'agent execution cancelled' } });
      }
      assert.match(server.stderr(), /finalised/);
    } finally {
      removeProject(project);
    }
  });

  it('finalises waiting runs on SIGTERM and exits 0', async () => {
    const project = makeProject(FILES);
    try {
      const seen = shared.endpoint.requests.length;
      const server = spawnServer(project);
      for (let i = 1; i <= 5; i++) {
        await server.send(toolCallLine(i, 'invoke_agent', { agent: 'assistant', prompt: `[[hold]] ${i}` }));
      }
      await shared.endpoint.waitForRequests(seen + 5);
      server.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.stderr());
      const journals = journalsIn(project);
      assert.equal(journals.length, 5);
      for (const file of journals) assert.equal(assertCompleteJournal(file, projectPublicKey(project)), 2, 'each held request is an unknown effect');
      assert.match(server.stderr(), /shutting down cause=SIGTERM live_runs=5 finalised=5 not_finalised=0/);
    } finally {
      removeProject(project);
    }
  });

  it('reports runs it could not finalise within the shutdown bound and exits non-zero', async () => {
    const project = makeProject(FILES);
    try {
      // A run waiting on its provider is ended by its owner at once (journal-handover.ts); one whose
      // worker thread is stuck holding its journal cannot be ended by anyone.
      const server = spawnServer(project, ['--shutdown-grace-ms', '0'], { SYMBI_FAULT_INJECTION: 'worker-hang-after-request' });
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'stuck [[fault:worker-hang]]' }, 'hang'));
      await waitFor('the request_sent progress notice', () => (server.stdout().includes('"request_sent"') ? true : undefined));
      server.kill('SIGTERM');
      assert.equal(await server.exited, 1);
      assert.match(server.stderr(), /not_finalised=1/);
      assert.match(server.stderr(), /were not finalised within 0 ms/);
    } finally {
      removeProject(project);
    }
  });

  it('finishes the journal from the supervisor when the worker thread dies mid-run, and keeps serving', async () => {
    const project = makeProject(FILES);
    try {
      const server = await sessionOnWire(project, { SYMBI_FAULT_INJECTION: 'worker-exit-after-request' });
      const resultOf = async (id: number) =>
        (await server.waitFor(id)) as {
          id?: number;
          result?: { isError?: boolean; structuredContent?: { audit: { run_id: string; path: string } }; content: { text: string }[] };
        };
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'crash [[fault:worker-exit]]' }));
      const crashed = await resultOf(1);
      assert.equal(crashed.result?.isError, true);
      assert.match(crashed.result.content[0]!.text, /worker running this invocation failed/);
      const audit = crashed.result.structuredContent!.audit;
      // Ended by the run's owner as a stopped run: the budget (the reservation now uncertain), then Terminated.
      assert.deepEqual(eventNames(readJournal(audit.path)), [...ROUTE_SEQUENCES.cancelledDuringCall]);
      assert.equal(assertCompleteJournal(audit.path, projectPublicKey(project)), 2, 'the request had left: its effect is unknown');
      await server.send(toolCallLine(2, 'invoke_agent', { agent: 'assistant', prompt: 'after the crash' }));
      const next = await resultOf(2);
      assert.equal(next.result?.isError, undefined, JSON.stringify(next));
      assert.equal(await server.end(), 0, `the server did not exit 0; its standard error ends: ${server.stderr().slice(-3000)}`);
    } finally {
      removeProject(project);
    }
  });

  it('exits at once on a second SIGINT while the shutdown drain is still waiting', async () => {
    const project = makeProject(FILES);
    try {
      const server = spawnServer(project, ['--shutdown-grace-ms', '60000'], { SYMBI_FAULT_INJECTION: 'worker-hang-after-request' });
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'stuck [[fault:worker-hang]]' }, 'hang'));
      // The worker blocks right after it reports the request_sent phase, so once
      // that notice is out, no cancel can reach the run any more.
      await waitFor('the request_sent progress notice', () => (server.stdout().includes('"request_sent"') ? true : undefined));
      let exited = false;
      void server.exited.then(() => (exited = true));
      server.kill('SIGINT');
      await waitFor('the shutdown to start', () => (server.stderr().includes('stopping: no new request') ? true : undefined));
      // The drain waits for a run whose worker thread no longer answers. A fixed wait on purpose: it
      // checks that the process does NOT exit, and an absence has no event to wait for.
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(exited, false, 'the first SIGINT waits for the drain');
      server.kill('SIGINT');
      assert.equal(await server.exited, 130);
      assert.match(server.stderr(), /second SIGINT: exiting now/);
    } finally {
      removeProject(project);
    }
  });

  it('ends a cancelled run from its owner while its worker thread is stuck between two journal writes', async () => {
    const project = makeProject(FILES);
    // No grace at the end: the shutdown then stops the pool, the stuck thread included, at once.
    const server = await sessionOnWire(project, { SYMBI_FAULT_INJECTION: 'worker-hang-between-writes' }, { shutdownGraceMs: 0 });
    try {
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'stuck [[fault:worker-hang]]' }, 'hang'));
      // The worker thread blocks for good once Started and DirectInferenceRequested are durable.
      await waitFor('the request_sent progress notice', () => (server.stdout().includes('"request_sent"') ? true : undefined));
      const [journal] = journalsIn(project);
      assert.ok(journal !== undefined);
      assert.deepEqual(eventNames(readJournal(journal)), ROUTE_SEQUENCES.cancelledDuringCall.slice(0, 4));

      await server.send(jsonLine({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'test' } }));
      const line = await waitFor('the cancellation line', () =>
        server
          .stderr()
          .split('\n')
          .find((l) => l.includes('run cancelled')),
      );
      assert.match(line, /terminal_durable=true/);
      // Written by the owner, exactly as the worker would have: the budget and the terminal record, one sync.
      assert.deepEqual(eventNames(readJournal(journal)), [...ROUTE_SEQUENCES.cancelledDuringCall]);
      assert.deepEqual(terminalOf(journal)?.reason, { Error: { message: 'agent execution cancelled' } });
      assert.equal(assertCompleteJournal(journal, projectPublicKey(project)), 2, 'the request record was durable: its effect is unknown');
      await waitFor('the run ended line', () => (/run ended .*outcome=cancelled reason=cancelled/.test(server.stderr()) ? true : undefined));
      // The server still answers.
      await server.send(toolCallLine(2, 'list_agents', {}));
      await server.waitFor(2);
    } finally {
      await server.end();
      removeProject(project);
    }
  });

  it('finalises cancelled runs queued on a hung worker thread from their owners', async () => {
    const project = makeProject(FILES);
    // No grace at the end: the hung run can never be finalised, and the pool's threads are stopped at once.
    const server = await sessionOnWire(project, { SYMBI_FAULT_INJECTION: 'worker-hang-after-request' }, { shutdownGraceMs: 0 });
    try {
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: 'stuck [[fault:worker-hang]]' }, 'hang'));
      await waitFor('the request_sent progress notice', () => (server.stdout().includes('"request_sent"') ? true : undefined));
      // The pool spreads these over its threads, the hung one included: the runs
      // given to it can never start, so only their owners can finish them.
      const ids = Array.from({ length: 16 }, (_, i) => i + 2);
      for (const id of ids) {
        await server.send(toolCallLine(id, 'invoke_agent', { agent: 'assistant', prompt: `queued ${id} [[hold]]` }));
      }
      // Each run is handed to the pool before its "run started" line: cancel once all 17 are out.
      await waitFor('17 run started lines', () => (server.stderr().split('run started').length > ids.length + 1 ? true : undefined));
      for (const id of ids) await server.send(jsonLine({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } }));

      const cancelled = await waitFor('16 cancellation lines', () => {
        const lines = server
          .stderr()
          .split('\n')
          .filter((l) => l.includes('run cancelled'));
        return lines.length >= ids.length ? lines : undefined;
      });
      assert.ok(
        cancelled.every((l) => l.includes('terminal_durable=true')),
        cancelled.join('\n'),
      );
      const ownerFinished = journalsIn(project).filter((f) => eventNames(readJournal(f)).join() === ROUTE_SEQUENCES.cancelledBeforeCall.join());
      assert.ok(ownerFinished.length >= 1, 'at least one run was finished by its owner');
      const key = projectPublicKey(project);
      for (const file of ownerFinished) {
        assert.deepEqual(terminalOf(file)?.reason, { Error: { message: 'agent execution cancelled' } });
        assert.equal(assertCompleteJournal(file, key), 0, 'no provider call was made');
      }
      // Every cancelled run's journal is complete; only the hung run's is still open.
      const open = journalsIn(project).filter((f) => terminalOf(f) === undefined);
      assert.equal(open.length, 1);
    } finally {
      await server.end();
      shared.endpoint.releaseAll();
      removeProject(project);
    }
  });

  it('leaves a verifiable prefix ending with DirectInferenceRequested after SIGKILL (inspect exits 2)', async () => {
    const project = makeProject(FILES);
    try {
      const seen = shared.endpoint.requests.length;
      const server = spawnServer(project);
      await server.send(toolCallLine(1, 'invoke_agent', { agent: 'assistant', prompt: '[[hold]]' }));
      await shared.endpoint.waitForRequests(seen + 1);
      server.kill('SIGKILL');
      await server.exited;
      const [journal] = journalsIn(project);
      assert.ok(journal);
      assert.deepEqual(readAsSymbiont(journal), ROUTE_SEQUENCES.cancelledDuringCall.slice(0, 4));
      const { status, report } = inspect(journal, runIdOf(journal), projectPublicKey(project));
      assert.equal(status, 2, JSON.stringify(report));
    } finally {
      removeProject(project);
    }
  });
});

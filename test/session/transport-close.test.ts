import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { suiteFixture } from '../support/suite-fixture.js';
import { providerEnv } from '../support/server.js';
import { startInProcessSession } from '../support/in-process-server.js';
import { assertCompleteJournal, journalsIn, projectPublicKey, readJournal } from '../support/journal.js';
import { jsonLine } from '../support/raw-stdio.js';
import { waitFor } from '../support/wait-for.js';

// The v2 MCP SDK aborts every request handler in flight when its transport closes, and sends nothing
// for them (its Protocol's close step; docs/architecture.md). The transport closes when standard
// output fails (the client went away): invoke_agent's handler is aborted then, and the run it
// started must still keep its owner until its terminal record is durable, as for any cancel. The
// session runs in this process so the test can make its standard output fail.

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('the SDK transport closing with a run in flight', () => {
  const shared = suiteFixture(FILES);

  for (const era of ['2025-11-25', '2026-07-28'] as const) {
    it(`(${era}) aborts the handler, answers nothing, and the run still ends its journal before the process would exit 0`, async () => {
      const session = await startInProcessSession(shared.project, { env: providerEnv(shared.endpoint.url) });
      const written: string[] = [];
      session.fromServer.on('data', (chunk: Buffer) => written.push(chunk.toString('utf8')));
      const known = new Set(journalsIn(shared.project));
      const seen = shared.endpoint.requests.length;
      const call = { name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'wait [[hold]]' } };
      if (era === '2025-11-25') {
        const initialize = { protocolVersion: era, capabilities: {}, clientInfo: { name: 'transport-close', version: '1' } };
        session.toServer.write(jsonLine({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: initialize }));
        session.toServer.write(jsonLine({ jsonrpc: '2.0', method: 'notifications/initialized' }));
        session.toServer.write(jsonLine({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: call }));
      } else {
        session.toServer.write(jsonLine({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { ...call, _meta: ENVELOPE } }));
      }
      await shared.endpoint.waitForRequests(seen + 1, 30_000);
      const request = shared.endpoint.requests[seen]!;

      // The client went away: the next write would fail with EPIPE.
      session.fromServer.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      const reason = await session.closed;
      assert.match(reason, /standard output closed|transport closed/);
      // The aborted handler cancelled the run: the provider request is closed early.
      await waitFor('the provider request to be closed', () => (request.closedEarly ? true : undefined), 30_000);
      const exitCode = await session.shutdown(`session closed: ${reason}`);
      assert.equal(exitCode, 0, 'every run was finalised');

      const journal = journalsIn(shared.project).find((file) => !known.has(file));
      assert.ok(journal, 'the run opened its journal');
      assertCompleteJournal(journal, projectPublicKey(shared.project));
      const records = readJournal(journal);
      const terminal = records[records.length - 1]?.payload.entry.event?.Terminated as { reason: unknown } | undefined;
      assert.ok(terminal, 'the journal ends with its terminal record');
      assert.match(JSON.stringify(terminal.reason), /Error.*cancelled/);
      assert.match(session.stderr(), /run ended .*outcome=cancelled reason=cancelled/);
      const answers = written
        .join('')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { id?: unknown });
      assert.equal(answers.filter((message) => message.id === 7).length, 0, 'a closed transport answers nothing');
    });
  }
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { LONE_SURROGATE_TEXT, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { kindEnv, KIND_PER_WIRE } from '../support/provider-env.js';
import { startInProcessServer, type InProcessServer } from '../support/in-process-server.js';
import { auditOf, textOf } from '../support/server.js';
import { inspect, type JournalRecord, readJournal } from '../support/journal.js';
import { readAsSymbiont } from '../support/symbiont-reader.js';
import { ROUTE_SEQUENCES } from '../support/symbiont-route.js';

// A provider that tries to make the run's own journal fail verification (issue 55): text the
// journal cannot hold (an unpaired surrogate, in the answer or in a tool call's arguments), token
// counts no reader holds (2^53-1 each, above Symbiont's u32), an error code that is no status (-1).
// Each run must end with a journal that verifies, that Symbiont's types read and its writer would
// have written, and with the answer withheld. The session is served in process
// (test/support/in-process-server.ts): what the tool answers and the journal holds is its logic.

const KEY = 'sk-provider-hostile-key-0123456789';
const AGENTS = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };
const U32_MAX = 0xffff_ffff;
/** A \u escape of a surrogate, as JSON would spell an unpaired one (paired ones are never written as escapes by the writer). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

type Event = Record<string, Record<string, unknown>>;
const eventOf = (record: JournalRecord): Event => record.payload.entry.event;
const finishOf = (records: JournalRecord[]): Record<string, unknown> => records.map(eventOf).find((e) => e.DirectInferenceFinished)!.DirectInferenceFinished!;
const terminalOf = (records: JournalRecord[]): Record<string, unknown> => eventOf(records.at(-1)!).Terminated!;

/** Runs `directive`, checks what every hostile case must give, and returns the journal's records and the inspect exit. */
async function hostileRun(server: InProcessServer, directive: string, error: RegExp): Promise<{ records: JournalRecord[]; status: number }> {
  const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `please answer ${directive}` } });
  const shown = textOf(result);
  assert.equal(result.isError, true, shown);
  assert.match(shown, error);
  for (const leak of [LONE_SURROGATE_TEXT, '\ufffd', 'Hello from the synthetic endpoint', KEY])
    assert.ok(!shown.includes(leak), `the result carries ${JSON.stringify(leak)}`);
  const ref = auditOf(result);
  const bytes = fs.readFileSync(ref.audit.path, 'utf8');
  assert.doesNotMatch(bytes, SURROGATE_ESCAPE, 'no surrogate escape in the journal');
  // Symbiont's types read every record, and its writer rule holds (symbiont-reader.ts).
  readAsSymbiont(ref.audit.path);
  const { status, report } = inspect(ref.audit.path, ref.audit.run_id, ref.audit.public_key);
  assert.ok(status === 0 || status === 2, `inspect exit ${status}: ${JSON.stringify(report)}`);
  assert.equal(report.journal_complete, true);
  const records = readJournal(ref.audit.path);
  assert.ok(typeof terminalOf(records).reason === 'object', 'the run ends with an Error');
  return { records, status };
}

// Once per wire format (the first provider kind that speaks it), from the declarations: a new wire format runs here unasked.
for (const [wire, kind] of KIND_PER_WIRE) {
  describe(`a hostile provider cannot break the journal (${wire})`, () => {
    let endpoint: SyntheticEndpoint;
    let project: string;
    let server: InProcessServer;

    before(async () => {
      endpoint = await startSyntheticEndpoint();
      project = makeProject(AGENTS);
      server = await startInProcessServer(project, { env: kindEnv(kind, endpoint.origin, KEY) });
    });

    after(async () => {
      await server.close();
      await endpoint.close();
      removeProject(project);
    });

    for (const where of ['text', 'args'] as const) {
      it(`an unpaired surrogate in the ${where === 'text' ? "answer's text" : "tool call's arguments"}: hashed as U+FFFD, withheld as malformed`, async () => {
        const { records, status } = await hostileRun(server, `[[surrogate:${where}]]`, /not well-formed Unicode text/);
        assert.deepEqual(
          records.map((r) => Object.keys(eventOf(r))[0]),
          [...ROUTE_SEQUENCES.keyInAnswer],
          'the answer is recorded by its hashes, never written',
        );
        assert.equal(finishOf(records).reason, 'Completed');
        assert.equal(status, 0);
      });
    }

    it('2^53-1 prompt and completion tokens: clamped to u32, the settlement exceeded, the answer withheld', async () => {
      const { records, status } = await hostileRun(server, '[[huge-usage]]', /more tokens than the call reserved/);
      const usage = finishOf(records).usage as Record<string, number>;
      assert.deepEqual(usage, { prompt_tokens: U32_MAX, completion_tokens: U32_MAX, total_tokens: U32_MAX });
      const settlement = records.map(eventOf).find((e) => e.BudgetReservationFinished)!.BudgetReservationFinished!;
      assert.equal(settlement.outcome, 'exceeded');
      for (const count of Object.values(terminalOf(records).total_usage as Record<string, number>)) assert.ok(count <= U32_MAX);
      assert.equal(status, 0);
    });

    it('HTTP 200 with {"error":{"code":-1}}: a provider failure whose status is not kept', async () => {
      const { records, status } = await hostileRun(server, '[[error-code:-1]]', /provider request failed/);
      const finish = finishOf(records);
      assert.equal(typeof finish.reason, 'object');
      assert.equal((finish.error as { status: unknown }).status, null, 'a code that is no HTTP status is not journaled as one');
      assert.equal(status, 2, 'the failed call is an unknown effect');
    });
  });
}

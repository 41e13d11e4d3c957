import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import { seedKey } from '../support/crafted-journal.js';
import { inspect } from '../support/journal.js';
import { checkWriterRule, readAsSymbiont } from '../support/symbiont-reader.js';
import { ROUTE_SEQUENCES } from '../support/symbiont-route.js';
import { repoRoot } from '../support/server-entry.js';

// Journals built by hand, record by record, as Symbiont's own route writes them (its key order
// after canonicalisation, nanosecond timestamps, an f32 temperature widened to f64, its
// `source_policy` and `approved_calls` shapes, none of this server's fields), signed with a key of
// the test's own. `symbi audit inspect` must read them with Symbiont's verdicts: it is not only a
// reader of this server's journals.

const canonical = canonicalize as unknown as (value: unknown) => string;
const AGENT = 'dc9dee67-e9d8-5265-af81-80b3f704699e';
const ROOT = crypto.randomUUID();
const RESERVATION = crypto.randomUUID();
const CALL = crypto.randomUUID();
const digest = (label: string): string => `sha256:${crypto.createHash('sha256').update(label).digest('hex')}`;
const USAGE = { prompt_tokens: 812, completion_tokens: 9, total_tokens: 821 };
const ZERO = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
const TIME = { secs: 0, nanos: 1_250_000 };

function events(runId: string, journalPath: string, publicKey: string): Record<string, [number, unknown]> {
  const sourcePolicy = { agent_name: 'declared', declaration_hash: digest('d'), policies: [], semantics: 'inline_effect_policy_v1', source_hash: digest('s') };
  const respond = { Respond: { content: 'Hello from Symbiont.' } };
  return {
    Started: [
      0,
      {
        agent_id: AGENT,
        config: {
          context_token_budget: 32000,
          default_recovery: { Retry: { base_delay: { nanos: 500000000, secs: 0 }, max_attempts: 2 } },
          delegation_chain: [],
          delegation_depth: 0,
          max_concurrent_tools: 5,
          max_delegation_depth: 3,
          max_iterations: 1,
          max_output_tokens: 4096,
          max_total_tokens: 16384,
          temperature: Math.fround(0.3),
          timeout: { nanos: 0, secs: 120 },
          tool_timeout: { nanos: 0, secs: 30 },
        },
        execution_context: {
          agent_definition: {
            declaration_hash: digest('d'),
            mode: 'text_response',
            name: 'declared',
            source_hash: digest('s'),
            surface: 'mcp-server',
            tools_enabled: false,
          },
          budget: { limit: 16384, root_id: ROOT, scope: 0 },
          source_policy: sourcePolicy,
        },
      },
    ],
    BudgetOpened: [0, { limit: 16384, root_id: ROOT }],
    BudgetReservationStarted: [
      0,
      {
        reservation: {
          agent_id: AGENT,
          ancestors: [{ limit: 16384, parent: null, scope: 0 }],
          audit: { path: journalPath, public_key: publicKey, run_id: runId },
          id: RESERVATION,
          input_tokens: 2900,
          iteration: 0,
          model: 'gpt-test',
          output_tokens: 4096,
          provider: 'openai',
          request_bytes: 1876,
          request_hash: digest('request'),
          root_id: ROOT,
        },
      },
    ],
    DirectInferenceRequested: [
      1,
      {
        call_id: CALL,
        communication: null,
        model: 'gpt-test',
        operation: 'mcp-server',
        provider: 'openai',
        recipient: AGENT,
        recipient_definition_hash: digest('s'),
        request_bytes: 1876,
        request_hash: digest('request'),
      },
    ],
    DirectInferenceResponseReceived: [1, { call_id: CALL, response_bytes: 190, response_hash: digest('response') }],
    DirectInferenceFinished: [
      1,
      { call_id: CALL, finish_reason: 'stop', reason: 'Completed', response_bytes: 190, response_hash: digest('response'), usage: USAGE },
    ],
    BudgetReservationFinished: [0, { outcome: 'confirmed', reservation_id: RESERVATION, root_id: ROOT, usage: USAGE }],
    ReasoningComplete: [1, { actions: [respond], iteration: 1, usage: USAGE }],
    PolicyEvaluated: [
      1,
      {
        action_count: 1,
        approved_calls: [
          {
            action: respond,
            approval: null,
            arguments: null,
            authorization_binding: digest('binding'),
            contract: null,
            fingerprint: digest('fingerprint'),
            resolved: {},
            source_policy: sourcePolicy,
          },
        ],
        denied_calls: [],
        denied_count: 0,
        iteration: 1,
      },
    ],
    ToolsDispatched: [1, { duration: TIME, iteration: 1, tool_count: 0 }],
    ToolBatchCompleted: [1, { duration: TIME, iteration: 1, observations: [] }],
    ObservationsCollected: [1, { iteration: 1, observation_count: 0 }],
    BudgetUpdated: [
      1,
      {
        budget: {
          available_tokens: 16384 - 821,
          exceeded: false,
          limit: 16384,
          reserved_tokens: 0,
          root_id: ROOT,
          scope: 0,
          uncertain_tokens: 0,
          usage: USAGE,
        },
      },
    ],
    Terminated: [1, { duration: { nanos: 42_000_000, secs: 1 }, iterations: 1, reason: 'Completed', total_usage: USAGE }],
  };
}

/** A signed, chained journal of `sequence`, each record's fields from `fields`, as Symbiont's ProtectedJournal writes it. */
function symbiontJournal(
  dir: string,
  sequence: readonly string[],
  fields: (name: string, index: number, runId: string, file: string, key: string) => [number, unknown],
) {
  const seed = crypto.randomBytes(32);
  const { sign, publicKeyHex } = seedKey(seed);
  const runId = crypto.randomUUID();
  const file = path.join(dir, `${AGENT}.${runId}.jsonl`);
  let previous = '0'.repeat(64);
  const lines: Buffer[] = [];
  sequence.forEach((name, index) => {
    const [iteration, event] = fields(name, index, runId, file, publicKeyHex);
    const payload = Buffer.from(
      canonical({
        entry: { agent_id: AGENT, event: { [name]: event }, iteration, sequence: index, timestamp: '2026-12-03T09:31:09.123456789Z' },
        previous_hash: previous,
        run_id: runId,
        version: 2,
      }),
    );
    const line = Buffer.from(`{"payload":${payload.toString()},"signature":"${sign(payload).toString('base64')}"}\n`);
    lines.push(line);
    previous = crypto.createHash('sha256').update(line).digest('hex');
  });
  fs.writeFileSync(file, Buffer.concat(lines), { mode: 0o600 });
  return { file, runId, publicKeyHex };
}

test("a journal in Symbiont's exact sequence for a permitted answer: complete, exit 0, read as Symbiont's format", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbiont-journal-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { file, runId, publicKeyHex } = symbiontJournal(dir, ROUTE_SEQUENCES.permitted, (name, _i, run, journal, key) => events(run, journal, key)[name]!);
  assert.deepEqual(readAsSymbiont(file), [...ROUTE_SEQUENCES.permitted]);
  const { status, report } = inspect(file, runId, publicKeyHex);
  assert.equal(status, 0, JSON.stringify(report));
  assert.equal(report.record_format, 'symbiont-response-route');
  assert.equal(report.journal_complete, true);
  assert.equal(report.agent_name, 'declared');
  assert.deepEqual(
    (report.effects as { identity: { kind: string }; outcome: string }[]).map((e) => [e.identity.kind, e.outcome]),
    [
      ['shared_inference', 'result_recorded'],
      ['direct_inference', 'result_recorded'],
    ],
  );
});

test("a journal in Symbiont's sequence for a call cancelled in flight: complete, but its effects are unknown (exit 2)", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbiont-journal-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { file, runId, publicKeyHex } = symbiontJournal(dir, ROUTE_SEQUENCES.cancelledDuringCall, (name, _i, run, journal, key) => {
    if (name === 'BudgetUpdated') {
      return [
        0,
        {
          budget: {
            available_tokens: 16384 - 6996,
            exceeded: false,
            limit: 16384,
            reserved_tokens: 0,
            root_id: ROOT,
            scope: 0,
            uncertain_tokens: 6996,
            usage: ZERO,
          },
        },
      ];
    }
    if (name === 'Terminated') return [0, { duration: TIME, iterations: 0, reason: { Error: { message: 'agent execution cancelled' } }, total_usage: ZERO }];
    return events(run, journal, key)[name]!;
  });
  const { status, report } = inspect(file, runId, publicKeyHex);
  assert.equal(status, 2, JSON.stringify(report));
  assert.equal(report.journal_complete, true);
  assert.equal(report.requires_reconciliation, true);
  assert.deepEqual(
    (report.effects as { outcome: string }[]).map((e) => e.outcome),
    ['unknown', 'unknown'],
  );
  assert.deepEqual(report.terminal_reason, { Error: { message: 'agent execution cancelled' } });
});

test("a settlement whose outcome is not the one its usage gives by Symbiont's rule fails verification (exit 1)", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbiont-journal-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { file, runId, publicKeyHex } = symbiontJournal(dir, ROUTE_SEQUENCES.permitted, (name, _i, run, journal, key) => {
    const [iteration, fields] = events(run, journal, key)[name]!;
    // Usage reported, so the rule gives `confirmed`; the record claims the effect is unknown.
    return name === 'BudgetReservationFinished' ? [iteration, { ...(fields as object), outcome: 'unknown' }] : [iteration, fields];
  });
  const { status, report } = inspect(file, runId, publicKeyHex);
  assert.equal(status, 1);
  assert.match((report.error as { message: string }).message, /line 7: the settlement records outcome "unknown", but its usage gives "confirmed"/);
});

test("a record missing a field Symbiont's type requires is refused, as Symbiont's reader refuses it (exit 1)", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbiont-journal-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { file, runId, publicKeyHex } = symbiontJournal(dir, ROUTE_SEQUENCES.permitted, (name, _i, run, journal, key) => {
    const [iteration, fields] = events(run, journal, key)[name]!;
    if (name !== 'Terminated') return [iteration, fields];
    const { duration: _, ...rest } = fields as Record<string, unknown>;
    return [iteration, rest];
  });
  assert.throws(() => readAsSymbiont(file), /missing field `duration`/);
  const { status, report } = inspect(file, runId, publicKeyHex);
  assert.equal(status, 1);
  assert.match((report.error as { message: string }).message, /line 14: malformed line: .*Terminated has no field "duration"/);
});

test("the test reader holds every journal to Symbiont's writer rule: nothing effect-starting after an unconfirmed outcome", () => {
  const failed = { DirectInferenceFinished: { reason: { Error: { message: 'Inference failed' } } } };
  // The order this server wrote a retry in before the rule: refused at the retry's reservation.
  assert.throws(
    () =>
      checkWriterRule([{ Started: {} }, { DirectInferenceRequested: {} }, failed, { BudgetReservationFinished: {} }, { BudgetReservationStarted: {} }], 'j'),
    /j:5: BudgetReservationStarted after the unconfirmed outcome at line 3/,
  );
  // A failed call's end, and a run that ends after an answered call, are what Symbiont's writer appends.
  checkWriterRule(
    [{ Started: {} }, { DirectInferenceRequested: {} }, failed, { BudgetReservationFinished: {} }, { BudgetUpdated: {} }, { Terminated: {} }],
    'j',
  );
  checkWriterRule([{ Started: {} }, { DirectInferenceFinished: { reason: 'Completed' } }, { DirectInferenceRequested: {} }], 'j');
});

test("docs/audit.md's table of outcomes lists the records test/support/symbiont-route.ts expects", () => {
  const text = fs.readFileSync(path.join(repoRoot, 'docs', 'audit.md'), 'utf8');
  const names = new Set<string>(ROUTE_SEQUENCES.permitted);
  const rowOf = (outcome: string): string[] => {
    const row = text.split('\n').find((line) => line.startsWith(`| ${outcome} |`));
    assert.ok(row, `docs/audit.md has a row for "${outcome}"`);
    return [...row.split(' | ')[1]!.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]!).filter((name) => names.has(name));
  };
  assert.deepEqual(rowOf('permitted'), [...ROUTE_SEQUENCES.permitted]);
  assert.deepEqual(rowOf('provider failure'), [...ROUTE_SEQUENCES.providerFailed]);
  assert.deepEqual(rowOf('deadline during the provider call'), [...ROUTE_SEQUENCES.deadline]);
  assert.deepEqual(rowOf('cancelled during the provider call'), [...ROUTE_SEQUENCES.cancelledDuringCall]);
  assert.deepEqual(rowOf('cancelled before the provider call'), [...ROUTE_SEQUENCES.cancelledBeforeCall]);
  assert.deepEqual(rowOf('refused by the model'), [...ROUTE_SEQUENCES.noProgress]);
  assert.deepEqual(rowOf("a request over the route's budget"), [...ROUTE_SEQUENCES.overBudget]);
});

// Journals the previous version of this server wrote (commit b780a1b, six records, plain hex hashes),
// with the key that signed them: they keep verifying, with the same verdicts, reported as the older format.
const OLD_JOURNALS = path.join(repoRoot, 'test', 'fixtures', 'journals-0.1');
for (const [label, expectedStatus] of [
  ['permitted', 0],
  ['denied', 0],
  ['provider-500', 2],
] as const) {
  test(`a journal of the 0.1 format (${label}) still verifies, as the older format`, () => {
    const name = fs.readdirSync(OLD_JOURNALS).find((n) => n.startsWith(`${label}.`))!;
    const runId = name
      .replace(/\.jsonl$/, '')
      .split('.')
      .at(-1)!;
    const key = fs.readFileSync(path.join(OLD_JOURNALS, 'public-key'), 'utf8').trim();
    const { status, report } = inspect(path.join(OLD_JOURNALS, name), runId, key);
    assert.equal(status, expectedStatus, JSON.stringify(report));
    assert.equal(report.record_format, 'symbi-mcp-0.1');
    assert.equal(report.journal_complete, true);
  });
}

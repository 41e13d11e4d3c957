import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PARTIAL_MODEL_TEXT, PROVIDER_ERROR_TEXT, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { repoRoot } from '../support/server-entry.js';
import { makeProject, removeProject } from '../support/project.js';
import { auditOf, providerEnv, textOf } from '../support/server.js';
import { startInProcessServer, type InProcessServer } from '../support/in-process-server.js';
import { kindEnv } from '../support/provider-env.js';
import { defaultTokenLimitParameter, PROVIDER_KINDS, PROVIDERS, tokenLimitField } from '../../src/shared/provider/provider-kinds.js';
import { eventNames, inspect, type JournalRecord, journalsIn, readJournal } from '../support/journal.js';
import { readAsSymbiont } from '../support/symbiont-reader.js';

// Every provider case the OpenAI, OpenRouter, Anthropic and Google Gemini documentation describes,
// served by the synthetic endpoint in the matching wire format and driven through invoke_agent of
// the session served in this process (in-process-server.ts: what a provider answers is the
// session's logic, and its operator log is kept in memory, redacted as on standard error). For each:
// the MCP result, the journal (terminal reason, one provider call per attempt, inspect verdict) and
// that no model text and no provider error text left through the result or the journal.

const POLICY =
  'permit(principal, action == Action::"respond", resource);\n' +
  'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n';

const AGENTS = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'policies/mcp-server/respond.cedar': POLICY,
};

const KEY = 'sk-provider-cases-key-0123456789';
// Symbiont's route, call by call (test/support/symbiont-route.ts): a failed call is its reservation,
// its request, an error finish and a settlement with no usage; an answered call has its response too.
// A run has one call, whatever its retries: Symbiont's writer allows no request after a failed finish.
const OPENING = ['Started', 'BudgetOpened'];
const CALL = ['BudgetReservationStarted', 'DirectInferenceRequested', 'DirectInferenceFinished', 'BudgetReservationFinished'];
const ANSWERED_CALL = [
  'BudgetReservationStarted',
  'DirectInferenceRequested',
  'DirectInferenceResponseReceived',
  'DirectInferenceFinished',
  'BudgetReservationFinished',
];
const STEP = ['ReasoningComplete', 'PolicyEvaluated', 'ToolsDispatched', 'ToolBatchCompleted', 'ObservationsCollected'];
const ENDING = ['BudgetUpdated', 'Terminated'];
/** Withheld: after an answered call, the finish rule denies the step's action (MaxIterations); after a failed one, the run ends in an Error. */
const withheld = (call: string[]): string[] => [...OPENING, ...call, ...(call === ANSWERED_CALL ? STEP : []), ...ENDING];
const completed = (call: string[]): string[] => [...OPENING, ...call, ...STEP, ...ENDING];
/** Symbiont's early stops (a refusal, an empty answer): the answered call, then the run's end, no step. */
const stopped = (call: string[]): string[] => [...OPENING, ...call, ...ENDING];
const REFUSAL_STOP = 'model refused the request (stop_reason=refusal)';
const EMPTY_STOP = 'model produced no tool calls and no text (no-progress turn)';

/** Every identifier the synthetic endpoint sends: request ids and error types or codes. */
const PROVIDER_IDENTIFIERS =
  /req_synthetic_|gen-synthetic-|_error\b|rate_limit|model_not_found|unsupported_parameter|INVALID_ARGUMENT|API_KEY_INVALID|FAILED_PRECONDITION|PERMISSION_DENIED|NOT_FOUND|RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED/;
/** A finish reason a provider could use to speak to the caller. */
const SPEAKING_FINISH = 'here-is-the-secret.launch-code-is-0000';

let nonce = 0;
/** A prompt unique per call, so `times=K` failures count per case and the prompt's absence can be checked. */
function prompt(directive: string): string {
  nonce += 1;
  return `case-${nonce}-prompt-text please answer ${directive}`;
}

type Event = Record<string, Record<string, unknown>>;
const eventOf = (record: JournalRecord): Event => record.payload.entry.event;
const terminalReason = (records: JournalRecord[]): unknown => eventOf(records[records.length - 1]!).Terminated?.reason;

interface Expectation {
  events: string[];
  /** The tool error (and the terminal record's message, unless `terminal` says otherwise) must match; undefined for a released answer. */
  error?: RegExp;
  /** The terminal record's Error message, where Symbiont's words differ from the tool error. */
  terminal?: RegExp | string;
}

async function invokeCase(server: InProcessServer, directive: string, expected: Expectation): Promise<{ records: JournalRecord[]; text: string }> {
  const text = prompt(directive);
  const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: text } });
  const shown = textOf(result);
  const ref = auditOf(result);
  assert.ok(ref?.audit?.path, `an audit reference: ${shown}`);
  const journalBytes = fs.readFileSync(ref.audit.path, 'utf8');
  const records = readJournal(ref.audit.path);
  assert.deepEqual(readAsSymbiont(ref.audit.path), expected.events, shown);

  if (expected.error === undefined) {
    assert.equal(result.isError, undefined, shown);
    assert.equal(shown, 'Hello from the synthetic endpoint.');
    assert.equal(terminalReason(records), 'Completed');
  } else {
    assert.equal(result.isError, true);
    assert.match(shown, expected.error);
    const reason = terminalReason(records) as 'MaxIterations' | { Error?: { message: string } };
    if (reason === 'MaxIterations') {
      // A withheld answer: the finish rule's reason is the step's denial, as Symbiont records a denied action.
      const decision = records.map(eventOf).find((e) => e.PolicyEvaluated !== undefined)!.PolicyEvaluated as { denied_calls: { reason: string }[] };
      assert.match(decision.denied_calls[0]!.reason, expected.error);
    } else {
      const message = reason.Error?.message ?? '';
      if (typeof expected.terminal === 'string') assert.equal(message, expected.terminal);
      else assert.match(message, expected.terminal ?? expected.error);
      // A failed call ends the run in Symbiont's words: "Inference failed: " and the call's own error (phases.rs).
      const finish = finishes(records).at(-1);
      if (finish !== undefined && finish.reason !== 'Completed') {
        assert.equal(message, `Inference failed: ${(finish.reason as { Error: { message: string } }).Error.message}`);
      }
    }
  }
  // The provider's identifiers (error types, request ids) are its own text: kept for the journal, never the caller.
  assert.doesNotMatch(shown, PROVIDER_IDENTIFIERS, 'no provider identifier in the result');
  // No model text, no provider error text, no prompt in the result; the journal keeps the model's
  // text (the step's action, docs/audit.md) but never the provider's error words, the prompt or the key.
  for (const leak of [PARTIAL_MODEL_TEXT, PROVIDER_ERROR_TEXT, 'secret you asked', text, KEY]) {
    assert.ok(!shown.includes(leak), `the result carries "${leak}": ${shown}`);
  }
  for (const leak of [PROVIDER_ERROR_TEXT, text, KEY]) assert.ok(!journalBytes.includes(leak), `the journal carries "${leak}"`);
  // Errored runs may need reconciliation (exit 2) by the verifier's rules; never a verification failure.
  const { status, report } = inspect(ref.audit.path, ref.audit.run_id, ref.audit.public_key);
  assert.ok(status === 0 || status === 2, `inspect exit ${status}: ${JSON.stringify(report)}`);
  assert.equal(report.journal_complete, true);
  return { records, text: shown };
}

/** The operator log's line may come after the result: wait for it. */
async function stderrMatching(server: InProcessServer, pattern: RegExp): Promise<void> {
  for (const deadline = Date.now() + 10_000; !pattern.test(server.stderr());) {
    assert.ok(Date.now() < deadline, `standard error never matched ${pattern}: ${server.stderr().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The DirectInferenceFinished records, in order. */
function finishes(records: JournalRecord[]): Record<string, unknown>[] {
  return records
    .map(eventOf)
    .filter((e) => e.DirectInferenceFinished !== undefined)
    .map((e) => e.DirectInferenceFinished!);
}

function callIds(records: JournalRecord[]): string[] {
  return records
    .map(eventOf)
    .filter((e) => e.DirectInferenceRequested !== undefined)
    .map((e) => e.DirectInferenceRequested!.call_id as string);
}

describe('provider cases', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let openai: InProcessServer;
  let anthropic: InProcessServer;
  let gemini: InProcessServer;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(AGENTS);
    openai = await startInProcessServer(project, { env: providerEnv(endpoint.url, { OPENAI_API_KEY: KEY }) });
    anthropic = await startInProcessServer(project, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        ANTHROPIC_API_KEY: KEY,
        ANTHROPIC_BASE_URL: endpoint.origin,
        ANTHROPIC_MODEL: 'claude-test',
      },
    });
    gemini = await startInProcessServer(project, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        GEMINI_API_KEY: KEY,
        GEMINI_BASE_URL: endpoint.origin,
        GEMINI_MODEL: 'gemini-test',
      },
    });
  });

  after(async () => {
    await openai.close();
    await anthropic.close();
    await gemini.close();
    await endpoint.close();
    removeProject(project);
  });

  describe('OpenAI Chat Completions and OpenRouter', () => {
    it('finish_reason "length" with partial text is withheld as truncated', async () => {
      const { records } = await invokeCase(openai, '[[finish:length]]', {
        events: withheld(ANSWERED_CALL),
        error: /cut off at the output token limit.*"length"/,
      });
      assert.equal(finishes(records)[0]!.finish_reason, 'max_tokens');
      assert.equal(finishes(records)[0]!.provider_finish_reason, 'length');
    });

    it('finish_reason "length" with empty text (a reasoning model spent its budget thinking) is withheld', async () => {
      // With no text, Symbiont's no-progress stop comes first: the run ends before the step.
      await invokeCase(openai, '[[finish:length,empty]]', { events: stopped(ANSWERED_CALL), error: /cut off at the output token limit/, terminal: EMPTY_STOP });
    });

    it("a finished answer with no text and no tool call ends as Symbiont's no-progress stop", async () => {
      await invokeCase(openai, '[[finish:stop,empty]]', { events: stopped(ANSWERED_CALL), error: /no text and no tool call/, terminal: EMPTY_STOP });
    });

    it("an answer of white space only (Rust's trim: Unicode white space, U+0085 included) is the same stop", async () => {
      await invokeCase(openai, '[[finish:stop,blank]]', { events: stopped(ANSWERED_CALL), error: /no text and no tool call/, terminal: EMPTY_STOP });
    });

    it('finish_reason "content_filter" is withheld as filtered', async () => {
      await invokeCase(openai, '[[finish:content_filter]]', { events: withheld(ANSWERED_CALL), error: /content filter/ });
    });

    it('message.refusal with content null is withheld as refused, the refusal text never returned', async () => {
      const { records } = await invokeCase(openai, '[[refusal]]', { events: stopped(ANSWERED_CALL), error: /refused to answer/, terminal: REFUSAL_STOP });
      assert.equal(finishes(records)[0]!.finish_reason, 'refusal');
    });

    it('a refusal content part is withheld as refused', async () => {
      await invokeCase(openai, '[[refusal-part]]', { events: stopped(ANSWERED_CALL), error: /refused to answer/, terminal: REFUSAL_STOP });
    });

    it('OpenRouter choice-level error (finish_reason "error") is a provider error, not an empty answer', async () => {
      const { records } = await invokeCase(openai, '[[choice-error]]', {
        events: withheld(CALL),
        error: /reported an error while generating the answer .*HTTP 200 \(code 502, the provider's identifiers are in the journal\)/,
      });
      const error = finishes(records)[0]!.error as { status: number; request_id: string };
      assert.equal(error.status, 502);
      assert.match(error.request_id, /^gen-synthetic-\d+$/);
    });

    it('OpenRouter top-level error inside an HTTP 200 keeps its code instead of "choices is missing"', async () => {
      await invokeCase(openai, '[[error-in-200]]', { events: withheld(CALL), error: /reported an error in the answer .*HTTP 200 \(code 502/ });
    });

    it('a local server that gives no finish reason is treated as complete and released', async () => {
      const { records } = await invokeCase(openai, '[[finish:none]]', { events: completed(ANSWERED_CALL) });
      assert.equal(finishes(records)[0]!.finish_reason, 'stop');
      assert.equal(finishes(records)[0]!.provider_finish_reason, null);
    });

    it('an unrecognised finish reason is withheld as unknown; its text reaches standard error only', async () => {
      const { records, text } = await invokeCase(openai, `[[finish:${SPEAKING_FINISH}]]`, {
        events: withheld(ANSWERED_CALL),
        error: /no finish reason this server recognises/,
      });
      assert.ok(!text.includes('launch-code'), text);
      assert.equal(finishes(records)[0]!.finish_reason, null, 'Symbiont has no name for an unknown finish');
      assert.equal(finishes(records)[0]!.provider_finish_reason, null);
      assert.ok(!JSON.stringify(records).includes('launch-code'), 'the journal does not carry the provider-chosen finish reason');
      await stderrMatching(openai, new RegExp(`unrecognised finish reason \\\\?"${SPEAKING_FINISH}\\\\?"`));
    });

    it('HTTP 400 that echoes the prompt: our words only, the prompt stays out of the journal', async () => {
      const { records } = await invokeCase(openai, '[[http:code=400,echo]]', {
        events: withheld(CALL),
        error:
          /HTTP 400 from POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: the provider refused the request as invalid .*\(the provider's identifiers are in the journal\)/,
      });
      const error = finishes(records)[0]!.error as Record<string, unknown>;
      assert.equal(error.status, 400);
      // Kept for the operator to reconcile with the provider: the request id and the error type.
      assert.match(String(error.request_id), /^req_synthetic_\d+$/);
      assert.equal(error.error_type, 'invalid_request_error');
      await stderrMatching(openai, /provider said .*HTTP 400 \(type invalid_request_error, request id req_synthetic_\d+\)/);
      assert.match(String(error.body_sha256), /^[0-9a-f]{64}$/);
      assert.ok((error.body_bytes as number) > 0);
    });

    it('HTTP 401 names the key variable, never the key', async () => {
      await invokeCase(openai, '[[http:code=401]]', { events: withheld(CALL), error: /HTTP 401 .*the key in OPENAI_API_KEY was refused/ });
    });

    it('HTTP 404 names the model, the variable that sets it and the URL tried', async () => {
      await invokeCase(openai, '[[http:code=404]]', {
        events: withheld(CALL),
        error: /HTTP 404 from POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: model or URL not found: the model "synthetic-model" \(set by CHAT_MODEL\)/,
      });
    });

    it('HTTP 429 is retried twice inside one journaled call, then reported', async () => {
      const { records } = await invokeCase(openai, '[[http:code=429,retry_after_ms=5]]', {
        events: withheld(CALL),
        error: /after 3 attempts.*HTTP 429 .*rate limited by the provider \(the provider's identifiers are in the journal, Retry-After 5 ms\)/,
        terminal: /^Inference failed: HTTP 429 .*rate limited by the provider/,
      });
      assert.equal(callIds(records).length, 1);
      const [finish] = finishes(records);
      assert.equal((finish!.error as { status: number }).status, 429);
      // The two attempts before the last, each with its own status and identifiers.
      const earlier = finish!.earlier_attempts as { message: string; error: { status: number; request_id: string } }[];
      assert.deepEqual(
        earlier.map((a) => a.error.status),
        [429, 429],
      );
      for (const attempt of earlier) {
        assert.match(attempt.message, /HTTP 429/);
        assert.match(attempt.error.request_id, /^req_synthetic_\d+$/);
      }
    });

    it('HTTP 503 then success: one call in the journal, the failed attempt in its finish, the answer released', async () => {
      const { records } = await invokeCase(openai, '[[http:code=503,times=1,retry_after_ms=10]]', { events: completed(ANSWERED_CALL) });
      const [finish] = finishes(records);
      assert.equal(finish!.reason, 'Completed');
      const [failed] = finish!.earlier_attempts as { message: string; error: { retry_after_ms: number } }[];
      assert.match(failed!.message, /HTTP 503/);
      assert.equal(failed!.error.retry_after_ms, 10);
    });

    it('a Retry-After longer than the time left is not waited for; the error says how long was asked', async () => {
      await invokeCase(openai, '[[http:code=429,retry_after=600]]', {
        events: withheld(CALL),
        error: /the provider asked to wait 600 s before retrying, more than the .* left before the deadline/,
        terminal: /^Inference failed: HTTP 429 /,
      });
    });

    it('a reasoning model that refuses max_tokens gets max_completion_tokens on the retry', async () => {
      const { records } = await invokeCase(openai, '[[reasoning-model]]', { events: completed(ANSWERED_CALL) });
      const [refused, answered] = endpoint.requests.slice(-2).map((r) => r.body as Record<string, unknown>);
      assert.equal(refused!.max_tokens, 4096);
      assert.equal(answered!.max_completion_tokens, 4096);
      assert.ok(!('max_tokens' in answered!));
      const [refusedAttempt] = finishes(records)[0]!.earlier_attempts as { error: Record<string, unknown> }[];
      const error = refusedAttempt!.error;
      assert.deepEqual([error.status, error.error_type, error.error_param], [400, 'unsupported_parameter', 'max_tokens']);
      assert.match(openai.stderr(), /the provider refused max_tokens; retrying with max_completion_tokens/);
    });

    it('a connection reset before any response byte is retried', async () => {
      await invokeCase(openai, '[[reset:times=1]]', { events: completed(ANSWERED_CALL) });
    });

    it('a cancel during the retry wait ends the run at once with its terminal record', async () => {
      const before = new Set(journalsIn(project));
      const controller = new AbortController();
      const call = openai.client
        .callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: prompt('[[http:code=503,retry_after=60]]') } }, undefined, {
          signal: controller.signal,
        })
        .catch((error: unknown) => error);
      // Wait until the first attempt has failed: its request record is durable and the server waits 60 s.
      const deadline = Date.now() + 10_000;
      let journal: string | undefined;
      while (Date.now() < deadline) {
        journal = journalsIn(project).find((f) => !before.has(f));
        if (journal !== undefined && endpoint.requests.some((r) => r.mode === 'http:code=503,retry_after=60' && r.answered)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(journal !== undefined, 'the run opened its journal');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const cancelledAt = Date.now();
      controller.abort();
      await call;
      let records: JournalRecord[] = [];
      while (Date.now() - cancelledAt < 5_000) {
        records = readJournal(journal);
        if (eventNames(records).at(-1) === 'Terminated') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.deepEqual(eventNames(records), withheld(CALL));
      assert.ok(Date.now() - cancelledAt < 5_000, 'the terminal record came long before the 60 s wait ended');
      const reason = terminalReason(records) as { Error?: { message: string } };
      assert.equal(reason.Error?.message, 'agent execution cancelled', "Symbiont's words for a cancel");
      // The failed attempt's finish keeps its own account (HTTP 503), recorded with the terminal record.
      assert.match(String((finishes(records)[0]!.reason as { Error: { message: string } }).Error.message), /HTTP 503/);
    });
  });

  describe('Anthropic Messages', () => {
    it('stop_reason "max_tokens" is withheld as truncated', async () => {
      await invokeCase(anthropic, '[[finish:max_tokens]]', { events: withheld(ANSWERED_CALL), error: /cut off at the output token limit.*"max_tokens"/ });
    });

    it('stop_reason "model_context_window_exceeded" is withheld', async () => {
      await invokeCase(anthropic, '[[finish:model_context_window_exceeded]]', { events: withheld(ANSWERED_CALL), error: /context window/ });
    });

    it('stop_reason "pause_turn" is withheld', async () => {
      await invokeCase(anthropic, '[[finish:pause_turn]]', { events: withheld(ANSWERED_CALL), error: /paused the turn/ });
    });

    it('stop_reason "refusal" is withheld as refused', async () => {
      const { records } = await invokeCase(anthropic, '[[refusal]]', {
        events: stopped(ANSWERED_CALL),
        error: /refused to answer.*"refusal"/,
        terminal: REFUSAL_STOP,
      });
      assert.equal(finishes(records)[0]!.finish_reason, 'refusal');
    });

    it('stop_reason "tool_use" is withheld', async () => {
      await invokeCase(anthropic, '[[tool-call]]', { events: withheld(ANSWERED_CALL), error: /tool call/ });
    });

    it('stop_reason "stop_sequence" is complete and released', async () => {
      await invokeCase(anthropic, '[[finish:stop_sequence]]', { events: completed(ANSWERED_CALL) });
    });

    it('a missing stop_reason is not taken for complete', async () => {
      await invokeCase(anthropic, '[[finish:none]]', { events: withheld(ANSWERED_CALL), error: /no finish reason this server recognises/ });
    });

    it('an error object inside an HTTP 200 keeps its type and request id in the journal, not the result', async () => {
      const { records } = await invokeCase(anthropic, '[[error-in-200]]', {
        events: withheld(CALL),
        error: /reported an error in the answer .*\(the provider's identifiers are in the journal\)/,
      });
      const error = finishes(records)[0]!.error as Record<string, unknown>;
      assert.equal(error.error_type, 'overloaded_error');
      assert.match(String(error.request_id), /^req_synthetic_\d+$/);
    });

    it('HTTP 529 (overloaded) then success: retried as a second call', async () => {
      await invokeCase(anthropic, '[[http:code=529,times=1,retry_after_ms=5]]', { events: completed(ANSWERED_CALL) });
    });

    it('HTTP 401 names ANTHROPIC_API_KEY', async () => {
      await invokeCase(anthropic, '[[http:code=401]]', {
        events: withheld(CALL),
        error:
          /HTTP 401 from POST http:\/\/127\.0\.0\.1:\d+\/v1\/messages: the key in ANTHROPIC_API_KEY was refused \(the provider's identifiers are in the journal\)/,
      });
    });

    it('HTTP 404 names the model and ANTHROPIC_MODEL', async () => {
      await invokeCase(anthropic, '[[http:code=404]]', {
        events: withheld(CALL),
        error: /model or URL not found: the model "claude-test" \(set by ANTHROPIC_MODEL\)/,
      });
    });

    it('HTTP 400 that echoes the prompt stays out of the result and the journal', async () => {
      await invokeCase(anthropic, '[[http:code=400,echo]]', { events: withheld(CALL), error: /HTTP 400 .*refused the request as invalid/ });
    });
  });

  // From https://ai.google.dev/api/generate-content (finish and block reasons, thought parts) and
  // https://ai.google.dev/gemini-api/docs/troubleshooting (the error body, its status and details).
  describe('Google Gemini generateContent', () => {
    it('finishReason "MAX_TOKENS" with partial text is withheld as truncated', async () => {
      const { records } = await invokeCase(gemini, '[[finish:MAX_TOKENS]]', {
        events: withheld(ANSWERED_CALL),
        error: /cut off at the output token limit \(a thinking model may have spent it all on thinking\).*"MAX_TOKENS"/,
      });
      assert.equal(finishes(records)[0]!.finish_reason, 'max_tokens');
      assert.equal(finishes(records)[0]!.provider_finish_reason, 'MAX_TOKENS');
    });

    it('finishReason "MAX_TOKENS" with no text (the budget spent on thinking) is the no-progress stop', async () => {
      await invokeCase(gemini, '[[finish:MAX_TOKENS,empty]]', {
        events: stopped(ANSWERED_CALL),
        error: /cut off at the output token limit/,
        terminal: EMPTY_STOP,
      });
    });

    for (const [reason, words] of [
      ['SAFETY', /safety filters blocked the prompt or the answer/],
      ['RECITATION', /recitation of a source/],
      ['PROHIBITED_CONTENT', /blocked prohibited content/],
      ['SPII', /sensitive personal information/],
      ['BLOCKLIST', /a term of a blocklist/],
    ] as const) {
      it(`finishReason "${reason}" with partial text is withheld as filtered`, async () => {
        const { records } = await invokeCase(gemini, `[[finish:${reason}]]`, { events: withheld(ANSWERED_CALL), error: words });
        assert.equal(finishes(records)[0]!.finish_reason, 'content_filter');
        assert.equal(finishes(records)[0]!.provider_finish_reason, reason);
      });
    }

    it('a blocked prompt (promptFeedback.blockReason, no candidates) is read as filtered, never as an empty answer', async () => {
      const { records } = await invokeCase(gemini, '[[blocked:PROHIBITED_CONTENT]]', {
        events: stopped(ANSWERED_CALL),
        error: /blocked prohibited content.*"PROHIBITED_CONTENT"/,
        terminal: EMPTY_STOP,
      });
      assert.equal(finishes(records)[0]!.finish_reason, 'content_filter');
      assert.equal(finishes(records)[0]!.provider_finish_reason, 'PROHIBITED_CONTENT');
    });

    it('a part with thought: true is never part of the judged and released answer, nor of the journal', async () => {
      const { records } = await invokeCase(gemini, '[[thought]]', { events: completed(ANSWERED_CALL) });
      assert.ok(!JSON.stringify(records).includes(PARTIAL_MODEL_TEXT), 'the thinking is not journaled');
      assert.equal(finishes(records)[0]!.provider_finish_reason, 'STOP');
    });

    it('a functionCall part is withheld as a proposed tool call', async () => {
      await invokeCase(gemini, '[[tool-call]]', { events: withheld(ANSWERED_CALL), error: /tool call/ });
    });

    it('"MALFORMED_FUNCTION_CALL" and "LANGUAGE" are withheld in our words', async () => {
      await invokeCase(gemini, '[[finish:MALFORMED_FUNCTION_CALL]]', { events: withheld(ANSWERED_CALL), error: /malformed function call/ });
      await invokeCase(gemini, '[[finish:LANGUAGE]]', { events: withheld(ANSWERED_CALL), error: /language is not supported/ });
    });

    it('a missing finishReason is not taken for complete; an unknown one reaches standard error only', async () => {
      await invokeCase(gemini, '[[finish:none]]', { events: withheld(ANSWERED_CALL), error: /no finish reason this server recognises/ });
      await invokeCase(gemini, `[[finish:${SPEAKING_FINISH}]]`, { events: withheld(ANSWERED_CALL), error: /no finish reason this server recognises/ });
      await stderrMatching(gemini, new RegExp(`unrecognised finish reason \\\\?"${SPEAKING_FINISH}\\\\?"`));
    });

    it('HTTP 400 INVALID_ARGUMENT with reason API_KEY_INVALID is a key problem, not a model problem', async () => {
      const { records, text } = await invokeCase(gemini, '[[http:code=400,reason=API_KEY_INVALID]]', {
        events: withheld(CALL),
        error:
          /HTTP 400 from POST http:\/\/127\.0\.0\.1:\d+\/v1beta\/models\/gemini-test:generateContent: the key in GEMINI_API_KEY was refused: it is not a valid API key \(the provider's identifiers are in the journal\)/,
      });
      assert.doesNotMatch(text, /check the model|model or URL not found/, 'a key problem, not a model problem');
      const error = finishes(records)[0]!.error as Record<string, unknown>;
      assert.deepEqual([error.status, error.error_type], [400, 'API_KEY_INVALID']);
      assert.equal(callIds(records).length, 1);
      assert.equal(finishes(records)[0]!.earlier_attempts, undefined, 'not retried');
      await stderrMatching(gemini, /provider said .*HTTP 400 \(type API_KEY_INVALID\)/);
    });

    it('HTTP 400 INVALID_ARGUMENT alone names the model and the variable that sets it, and no output limit field', async () => {
      const { text } = await invokeCase(gemini, '[[http:code=400,echo]]', {
        events: withheld(CALL),
        error: /HTTP 400 .*: the provider refused the request as invalid \(check the model "gemini-test" \(set by GEMINI_MODEL\)\)/,
      });
      assert.doesNotMatch(text, /SYMBI_TOKEN_LIMIT_PARAMETER/);
    });

    it('HTTP 400 FAILED_PRECONDITION: the free tier is not available there, enable billing', async () => {
      await invokeCase(gemini, '[[http:code=400,status=FAILED_PRECONDITION]]', {
        events: withheld(CALL),
        error: /HTTP 400 .*free tier of the Gemini API is not available .*enable billing for the project of the key in GEMINI_API_KEY/,
      });
    });

    it('HTTP 403 PERMISSION_DENIED names the key variable and the model', async () => {
      await invokeCase(gemini, '[[http:code=403]]', {
        events: withheld(CALL),
        error: /HTTP 403 .*the key in GEMINI_API_KEY may not use the model "gemini-test" \(set by GEMINI_MODEL\) or the Gemini API/,
      });
    });

    it('HTTP 404 NOT_FOUND names the model, GEMINI_MODEL and the URL tried', async () => {
      await invokeCase(gemini, '[[http:code=404]]', {
        events: withheld(CALL),
        error:
          /HTTP 404 from POST http:\/\/127\.0\.0\.1:\d+\/v1beta\/models\/gemini-test:generateContent: model or URL not found: the model "gemini-test" \(set by GEMINI_MODEL\)/,
      });
    });

    it("HTTP 429 RESOURCE_EXHAUSTED: RetryInfo's retryDelay is the wait, then the answer is released", async () => {
      const { records } = await invokeCase(gemini, '[[http:code=429,times=1,retry_delay=0.01s]]', { events: completed(ANSWERED_CALL) });
      const [failed] = finishes(records)[0]!.earlier_attempts as { message: string; error: Record<string, unknown> }[];
      assert.match(failed!.message, /HTTP 429 .*rate limited by the provider, or the quota of the project behind GEMINI_API_KEY is used up/);
      assert.deepEqual([failed!.error.error_type, failed!.error.retry_after_ms], ['RESOURCE_EXHAUSTED', 10]);
    });

    it('a retryDelay longer than the time left is not waited for; the error says how long was asked', async () => {
      await invokeCase(gemini, '[[http:code=429,retry_delay=600s]]', {
        events: withheld(CALL),
        error: /the provider asked to wait 600 s before retrying, more than the .* left before the deadline/,
        terminal: /^Inference failed: HTTP 429 /,
      });
    });

    it('HTTP 503 UNAVAILABLE is retried twice inside one journaled call, then reported', async () => {
      const { records } = await invokeCase(gemini, '[[http:code=503,retry_delay=0.001s]]', {
        events: withheld(CALL),
        error: /after 3 attempts.*HTTP 503 .*the provider is overloaded or temporarily unavailable/,
        terminal: /^Inference failed: HTTP 503 /,
      });
      assert.equal(callIds(records).length, 1);
      assert.equal((finishes(records)[0]!.earlier_attempts as unknown[]).length, 2);
    });

    it("HTTP 504 DEADLINE_EXCEEDED is the provider's own deadline, not a gateway's", async () => {
      await invokeCase(gemini, '[[http:code=504,retry_delay=0.001s]]', {
        events: withheld(CALL),
        error: /HTTP 504 .*could not finish within its own deadline/,
        terminal: /^Inference failed: HTTP 504 /,
      });
    });

    it("Google's error body inside an HTTP 200 (a gateway's) keeps its status in the journal, not the result", async () => {
      const { records } = await invokeCase(gemini, '[[error-in-200]]', {
        events: withheld(CALL),
        error: /reported an error in the answer .*HTTP 200 \(code 503, the provider's identifiers are in the journal\)/,
      });
      assert.equal((finishes(records)[0]!.error as Record<string, unknown>).error_type, 'UNAVAILABLE');
    });

    it('a request the endpoint saw carried the key in x-goog-api-key, never in its URL', () => {
      const seen = endpoint.requests.filter((r) => r.format === 'gemini-generate-content');
      assert.ok(seen.length > 0);
      for (const request of seen) {
        assert.equal(request.headers['x-goog-api-key'], KEY);
        assert.equal(request.headers.authorization, undefined);
        assert.equal(request.target, '/v1beta/models/gemini-test:generateContent');
      }
    });
  });

  it('standard error gets the provider message (capped, no key) and never model text', () => {
    for (const server of [openai, anthropic, gemini]) {
      const log = server.stderr();
      assert.match(log, /provider said/);
      assert.ok(!log.includes(PARTIAL_MODEL_TEXT), 'no model text on stderr');
      assert.ok(!log.includes(KEY), 'no key on stderr');
    }
  });

  it('every request carried the User-Agent symbi-mcp/<package version>', () => {
    const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    assert.ok(endpoint.requests.length > 0);
    for (const request of endpoint.requests) assert.equal(request.headers['user-agent'], `symbi-mcp/${version}`);
  });
});

describe('the output limit and the shipped restrict-by-capability example, for every provider', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  const servers: InProcessServer[] = [];
  const example = fs.readFileSync(path.join(repoRoot, 'policies', 'examples', 'restrict-by-capability.cedar'), 'utf8');

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject({
      'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["summarize"]\n}\n',
      'policies/restrict-by-capability.cedar': example,
    });
  });

  after(async () => {
    for (const server of servers) await server.close();
    await endpoint.close();
    removeProject(project);
  });

  const start = async (env: Record<string, string>): Promise<InProcessServer> => {
    const server = await startInProcessServer(project, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env } });
    servers.push(server);
    return server;
  };

  /** The value at a dotted path of a request body (generationConfig.maxOutputTokens). */
  const at = (body: unknown, dotted: string): unknown =>
    dotted.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], body);

  interface LimitCase {
    label: string;
    env: (endpoint: SyntheticEndpoint) => Record<string, string>;
    directive: string;
    /** The output limit as sent: its field (a dotted path) and value. */
    field: string;
    tokens: number;
  }
  const plain = (extra: Record<string, string>) => (endpoint: SyntheticEndpoint) => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v === 'URL' ? endpoint.url : v === 'ORIGIN' ? endpoint.origin : v])),
  });
  const cases: LimitCase[] = [
    // Every kind, from its declaration: its complete answer ("stop", "end_turn", "STOP", ...) and a lowered limit under its own field.
    ...PROVIDER_KINDS.map((kind) => ({
      label: `${PROVIDERS[kind].title} (a lowered limit in its own field)`,
      env: (endpoint: SyntheticEndpoint) => kindEnv(kind, endpoint.origin, KEY, { SYMBI_MAX_OUTPUT_TOKENS: '300' }),
      directive: '[[fixed]]',
      field: tokenLimitField(kind, defaultTokenLimitParameter(kind, 'http://127.0.0.1')),
      tokens: 300,
    })),
    {
      label: 'a keyless local server with no finish reason',
      env: plain({ OPENAI_BASE_URL: 'URL' }),
      directive: '[[finish:none]]',
      field: 'max_tokens',
      tokens: 4096,
    },
    {
      label: 'an OpenAI-compatible server ("stop")',
      env: plain({ OPENAI_BASE_URL: 'URL', OPENAI_API_KEY: KEY }),
      directive: '[[fixed]]',
      field: 'max_tokens',
      tokens: 4096,
    },
    {
      label: 'Anthropic ("stop_sequence")',
      env: plain({ ANTHROPIC_BASE_URL: 'ORIGIN', ANTHROPIC_API_KEY: KEY }),
      directive: '[[finish:stop_sequence]]',
      field: 'max_tokens',
      tokens: 4096,
    },
    {
      label: 'a lowered limit sent as max_completion_tokens when asked',
      env: plain({ OPENAI_BASE_URL: 'URL', SYMBI_TOKEN_LIMIT_PARAMETER: 'max_completion_tokens', SYMBI_MAX_OUTPUT_TOKENS: '512' }),
      directive: '[[fixed]]',
      field: 'max_completion_tokens',
      tokens: 512,
    },
  ];
  for (const { label, env, directive, field, tokens } of cases) {
    it(`answers through ${label}`, async () => {
      const server = await start(env(endpoint));
      const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `hello ${directive}` } });
      assert.equal(result.isError, undefined, textOf(result));
      assert.equal(textOf(result), 'Hello from the synthetic endpoint.');
      const sent = endpoint.requests.at(-1)!.body as Record<string, unknown>;
      assert.equal(at(sent, field), tokens, field);
      for (const other of ['max_tokens', 'max_completion_tokens'].filter((name) => name !== field)) assert.ok(!(other in sent), `${other} is not sent`);
    });
  }
});

describe('a retry is the same call, sent under its one durable request record', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: InProcessServer;
  const seenAtRequest: string[][] = [];

  before(async () => {
    project = makeProject(AGENTS);
    endpoint = await startSyntheticEndpoint({
      // Read from inside the provider, as each attempt arrives: what the journal already holds.
      beforeAnswer: () => {
        const [journal] = journalsIn(project);
        if (journal !== undefined) seenAtRequest.push(eventNames(readJournal(journal)));
      },
    });
    server = await startInProcessServer(project, { env: providerEnv(endpoint.url, { OPENAI_API_KEY: KEY }) });
  });

  after(async () => {
    await server.close();
    await endpoint.close();
    removeProject(project);
  });

  it('every attempt finds the one DirectInferenceRequested durable, and no finish before the last attempt', async () => {
    const { records } = await invokeCase(server, '[[http:code=502,times=2,retry_after_ms=1]]', { events: completed(ANSWERED_CALL) });
    const requested = [...OPENING, ...CALL.slice(0, 2)];
    assert.deepEqual(seenAtRequest, [requested, requested, requested]);
    assert.equal((finishes(records)[0]!.earlier_attempts as unknown[]).length, 2);
  });
});

describe('a legacy Azure OpenAI deployment URL', () => {
  it('is refused before any journal, naming the /openai/v1 route to use instead', async () => {
    const project = makeProject(AGENTS);
    const server = await startInProcessServer(project, {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        OPENAI_API_KEY: KEY,
        OPENAI_BASE_URL: 'https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21',
      },
    });
    try {
      const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
      assert.equal(result.isError, true);
      assert.match(
        textOf(result),
        /legacy Azure OpenAI deployment URL.*use the v1 route https:\/\/contoso\.openai\.azure\.com\/openai\/v1 with the deployment name in CHAT_MODEL/,
      );
      assert.ok(!textOf(result).includes(KEY));
      assert.deepEqual(journalsIn(project), []);
    } finally {
      await server.close();
      removeProject(project);
    }
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FINISH_REASONS, FINISH_TABLE, explainFinish, normalizeFinish, shortIdentifier } from '../../src/shared/provider/finish-reasons.js';
import { WIRE_FORMAT_NAMES, WIRE_FORMATS } from '../../src/shared/provider/provider-kinds.js';
import { protobufDurationMs } from '../../src/shared/provider/wire-gemini-generate-content.js';
import { commonErrorFields } from '../../src/shared/provider/wire-format.js';
import { ProviderError } from '../../src/worker/providers/provider-error.js';
import { requestIdOf, retryAfterMs, safeExcerpt } from '../../src/worker/providers/provider-http.js';
import { BACKOFF_MAX_MS, MAX_RETRIES, RETRYABLE_HTTP_STATUSES, backoffMs, decideRetry, isRetryable } from '../../src/worker/providers/retry-policy.js';

// The pure rules behind the stdio cases in provider-cases.test.ts: which failures are retried and
// after how long, how the providers' headers and error bodies are read, and the finish table.

const http = (status: number, retryAfter?: number): ProviderError =>
  new ProviderError(`HTTP ${status}`, 'http', status, retryAfter === undefined ? { status } : { status, retryAfterMs: retryAfter });

describe('retry policy', () => {
  it('retries exactly the documented transient statuses and a reset before any response byte', () => {
    assert.deepEqual(
      [...RETRYABLE_HTTP_STATUSES].sort((a, b) => a - b),
      [408, 429, 500, 502, 503, 504, 529],
    );
    for (const status of RETRYABLE_HTTP_STATUSES) assert.equal(isRetryable(http(status)), true, String(status));
    for (const status of [400, 401, 403, 404, 409, 413, 422, 501]) assert.equal(isRetryable(http(status)), false, String(status));
    assert.equal(isRetryable(new ProviderError('reset', 'network', undefined, { resetBeforeResponse: true })), true);
    assert.equal(isRetryable(new ProviderError('refused', 'network')), false);
    assert.equal(isRetryable(new ProviderError('in a 200', 'provider', undefined, { status: 502 })), false);
    for (const kind of ['malformed', 'oversize', 'aborted'] as const) assert.equal(isRetryable(new ProviderError('x', kind)), false);
    assert.equal(isRetryable(new Error('not a provider error')), false);
  });

  it('at most twice', () => {
    assert.equal(MAX_RETRIES, 2);
    assert.equal(decideRetry(http(503), 0, 60_000).retry, true);
    assert.equal(decideRetry(http(503), 1, 60_000).retry, true);
    assert.equal(decideRetry(http(503), 2, 60_000).retry, false);
  });

  it('exponential backoff with jitter, capped', () => {
    assert.equal(
      backoffMs(0, () => 0),
      250,
    );
    assert.equal(
      backoffMs(0, () => 1),
      500,
    );
    assert.equal(
      backoffMs(1, () => 0),
      500,
    );
    assert.equal(
      backoffMs(1, () => 1),
      1000,
    );
    assert.equal(
      backoffMs(30, () => 1),
      BACKOFF_MAX_MS,
    );
    const seen = new Set(Array.from({ length: 50 }, () => backoffMs(0)));
    assert.ok(seen.size > 1, 'jitter varies the wait');
  });

  it('honours Retry-After when it fits the time left, and says how long was asked when it does not', () => {
    assert.deepEqual(decideRetry(http(429, 2_000), 0, 10_000), { retry: true, waitMs: 2_000 });
    const refused = decideRetry(http(429, 30_000), 0, 10_000);
    assert.equal(refused.retry, false);
    assert.match((refused as { why: string }).why, /asked to wait 30 s before retrying, more than the 10 s left/);
    const noTime = decideRetry(http(503), 0, 100, () => 1);
    assert.equal(noTime.retry, false);
    assert.match((noTime as { why: string }).why, /no time is left for a retry/);
  });
});

describe('reading provider answers', () => {
  it('Retry-After in seconds, as an HTTP date, and retry-after-ms first', () => {
    assert.equal(retryAfterMs({ 'retry-after': '3' }), 3_000);
    assert.equal(retryAfterMs({ 'retry-after': '1.5' }), 1_500);
    assert.equal(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }), 250);
    const now = Date.parse('2026-11-30T12:00:00Z');
    assert.equal(retryAfterMs({ 'retry-after': 'Mon, 30 Nov 2026 12:00:07 GMT' }, now), 7_000);
    assert.equal(retryAfterMs({ 'retry-after': 'soon' }), undefined);
    assert.equal(retryAfterMs({}), undefined);
  });

  it('request ids from x-request-id, request-id or apim-request-id, identifiers only', () => {
    assert.equal(requestIdOf({ 'x-request-id': 'req_abc123' }), 'req_abc123');
    assert.equal(requestIdOf({ 'request-id': 'req_011CSHoEeqs5C35K2UUqR7Fy' }), 'req_011CSHoEeqs5C35K2UUqR7Fy');
    assert.equal(requestIdOf({ 'apim-request-id': '6f1c1f0e-1b2a-4c3d-9e8f-0a1b2c3d4e5f' }), '6f1c1f0e-1b2a-4c3d-9e8f-0a1b2c3d4e5f');
    assert.equal(requestIdOf({ 'x-request-id': 'free text with spaces' }), null);
  });

  it("Google's error body: its status, ErrorInfo's reason as the type, RetryInfo's delay", () => {
    const errorFields = WIRE_FORMATS['gemini-generate-content'].errorFields;
    const badKey = {
      error: {
        code: 400,
        message: 'API key not valid. Please pass a valid API key.',
        status: 'INVALID_ARGUMENT',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
            metadata: { service: 'generativelanguage.googleapis.com' },
          },
          { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message: 'API key not valid. Please pass a valid API key.' },
        ],
      },
    };
    assert.deepEqual(errorFields(badKey), {
      errorType: 'API_KEY_INVALID',
      errorStatus: 'INVALID_ARGUMENT',
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
    });
    const quota = {
      error: {
        code: 429,
        message: 'You exceeded your current quota.',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests' }],
          },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '31s' },
        ],
      },
    };
    assert.deepEqual(errorFields(quota), {
      errorType: 'RESOURCE_EXHAUSTED',
      errorStatus: 'RESOURCE_EXHAUSTED',
      code: 429,
      message: 'You exceeded your current quota.',
      retryAfterMs: 31_000,
    });
    // Free text where an identifier belongs is dropped, as in every wire format.
    assert.deepEqual(errorFields({ error: { code: 400, status: 'the secret is 0000', message: 'x' } }), { code: 400, message: 'x' });
    assert.equal(protobufDurationMs('1.5s'), 1_500);
    assert.equal(protobufDurationMs('0.000000001s'), 1);
    assert.equal(protobufDurationMs('30'), undefined);
    assert.equal(protobufDurationMs(30), undefined);
  });

  it('error bodies of the three shapes give identifiers, never free text as a type', () => {
    assert.deepEqual(commonErrorFields({ error: { message: 'm', type: 'invalid_request_error', code: 'model_not_found' } }), {
      errorType: 'model_not_found',
      message: 'm',
    });
    assert.deepEqual(commonErrorFields({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_1' }), {
      errorType: 'overloaded_error',
      message: 'Overloaded',
      requestId: 'req_1',
    });
    assert.deepEqual(commonErrorFields({ error: { code: 402, message: 'credits' } }), { code: 402, message: 'credits' });
    assert.deepEqual(commonErrorFields({ error: { type: 'Here is the secret: 0000', message: 'x' } }), { message: 'x' });
    assert.deepEqual(commonErrorFields({ error: "model 'x' not found" }), { message: "model 'x' not found" });
  });

  it('the provider message kept for standard error is capped and has keys redacted', () => {
    // Our key at REDACTED_KEY_MIN_CHARS (10) characters: a shorter one is a dummy, left as text (key-redaction.ts).
    const text = `bad key sk-${'a'.repeat(40)} and Bearer abc.def plus ours OURKEY1234 ${'x'.repeat(500)}`;
    const shown = safeExcerpt(text, 'OURKEY1234');
    assert.ok(shown.length <= 203);
    assert.ok(!shown.includes('aaaaaaaa') && !shown.includes('abc.def') && !shown.includes('OURKEY'));
  });
});

describe('finish vocabulary', () => {
  it('every row maps to a value of the vocabulary, each provider value once per wire format', () => {
    const keys = new Set<string>();
    for (const row of FINISH_TABLE) {
      assert.ok(FINISH_REASONS.includes(row.finish));
      const key = `${row.wire}:${row.raw}`;
      assert.ok(!keys.has(key), key);
      keys.add(key);
    }
  });

  it('only stop, a missing OpenAI reason, end_turn, stop_sequence and STOP are complete', () => {
    const complete = FINISH_TABLE.filter((r) => r.finish === 'complete').map((r) => `${r.wire}:${r.raw}`);
    assert.deepEqual(complete.sort(), [
      'anthropic-messages:end_turn',
      'anthropic-messages:stop_sequence',
      'gemini-generate-content:STOP',
      'openai-chat:null',
      'openai-chat:stop',
    ]);
    assert.equal(normalizeFinish('anthropic-messages', null).finish, 'unknown');
    assert.equal(normalizeFinish('gemini-generate-content', null).finish, 'unknown');
    assert.equal(normalizeFinish('openai-chat', 'end_turn').finish, 'unknown');
    assert.equal(normalizeFinish('anthropic-messages', 'stop').finish, 'unknown');
    assert.equal(normalizeFinish('gemini-generate-content', 'stop').finish, 'unknown', "Google's values are upper case");
  });

  it("every wire format's rows name each value once, and its value explains itself in our words", () => {
    for (const wire of WIRE_FORMAT_NAMES) {
      const rows = WIRE_FORMATS[wire].finish.rows;
      assert.ok(
        rows.some((r) => r.finish === 'complete'),
        `${wire} has a value for a finished answer`,
      );
      for (const row of rows.filter((r) => r.raw !== null)) assert.match(explainFinish(row.finish, row.raw), new RegExp(`"${row.raw}"`), `${wire}:${row.raw}`);
    }
  });

  it('a provider value that is not a short identifier is neither recorded nor taken for a missing one', () => {
    const odd = normalizeFinish('openai-chat', 'the model said: launch code 0000');
    assert.deepEqual([odd.finish, odd.providerValue], ['unknown', null]);
    assert.equal(normalizeFinish('openai-chat', 42).finish, 'unknown');
    assert.equal(shortIdentifier('x'.repeat(65)), null);
    assert.match(explainFinish('truncated', 'length'), /output token limit.*"length"/);
  });

  it('a value the table does not name is unknown, kept for standard error only, and never quoted in the explanation', () => {
    const speaking = normalizeFinish('openai-chat', 'here-is-the-secret.launch-code-is-0000');
    assert.deepEqual(speaking, { finish: 'unknown', providerValue: null, unrecognized: 'here-is-the-secret.launch-code-is-0000' });
    assert.equal(normalizeFinish('anthropic-messages', { a: 1 }).unrecognized, 'a JSON object');
    assert.equal(normalizeFinish('anthropic-messages', null).unrecognized, undefined);
    assert.doesNotMatch(explainFinish('unknown', 'here-is-the-secret.launch-code-is-0000'), /launch-code/);
    assert.doesNotMatch(explainFinish('complete', 'eos_token'), /eos_token/);
  });
});

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_ANSWER, SECRET_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { MAX_OUTPUT_TOKENS, MiB } from '../../src/shared/limits.js';
import { providerConfigFor, type ProviderConfig } from '../../src/shared/provider/provider-config.js';
import type { ProviderKind } from '../../src/shared/provider/provider-kinds.js';
import type { TypedInferenceRequest } from '../../src/shared/provider/inference-types.js';
import { callProvider } from '../../src/worker/providers/provider-call.js';
import { ProviderError } from '../../src/worker/providers/provider-error.js';
import { parseWireAnswer } from '../../src/worker/providers/wire-call.js';

const parseOpenAiChatResponse = (json: unknown) => parseWireAnswer('openai-chat', json);
const parseAnthropicMessagesResponse = (json: unknown) => parseWireAnswer('anthropic-messages', json);
const parseGeminiResponse = (json: unknown, notes?: string[]) =>
  parseWireAnswer('gemini-generate-content', json, notes === undefined ? {} : { operatorNotes: notes });

const KEY = 'sk-SENTINEL-4f1c9e-do-not-leak';
const SYSTEM_TEXT = 'You are the registered agent `assistant`. Runtime-owned text.';

function request(prompt: string, provider: ProviderKind = 'openai', extraUser: string[] = []): TypedInferenceRequest {
  return {
    conversation: [
      { role: 'system', content: SYSTEM_TEXT },
      ...extraUser.map((content) => ({ role: 'user' as const, content })),
      { role: 'user', content: prompt },
    ],
    options: { provider, model: provider === 'anthropic' ? 'claude-test' : provider === 'gemini' ? 'gemini-test' : 'gpt-test', max_tokens: MAX_OUTPUT_TOKENS },
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    assert.ok(!error.message.includes(KEY), `the key leaked into: ${error.message}`);
    assert.ok(!error.message.includes('\n'), 'one-line message');
    return error;
  }
  assert.fail('expected the call to fail');
}

function timeout(): AbortSignal {
  return AbortSignal.timeout(20_000);
}

describe('providers against the synthetic endpoint', () => {
  let endpoint: SyntheticEndpoint;
  let openai: ProviderConfig;
  let anthropic: ProviderConfig;
  let gemini: ProviderConfig;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    openai = providerConfigFor({ kind: 'openai', baseUrl: endpoint.url, model: 'gpt-test', apiKey: KEY });
    anthropic = providerConfigFor({ kind: 'anthropic', baseUrl: endpoint.origin, model: 'claude-test', apiKey: KEY });
    gemini = providerConfigFor({ kind: 'gemini', baseUrl: endpoint.origin, model: 'gemini-test', apiKey: KEY });
  });
  after(async () => {
    await endpoint.close();
  });

  const last = () => endpoint.requests[endpoint.requests.length - 1]!;

  it('OpenAI-compatible: exact body (model, messages, max_tokens 4096, no tools), bearer and user agent headers', async () => {
    const typed = request('Say hello.', 'openai', ['Project guidance from AGENTS.md:\nbe brief']);
    const response = await callProvider(openai, typed, timeout());
    const seen = last();
    assert.equal(seen.path, '/v1/chat/completions');
    assert.equal(seen.headers.authorization, `Bearer ${KEY}`);
    assert.match(String(seen.headers['content-type']), /^application\/json/);
    assert.match(String(seen.headers['user-agent']), /^symbi-mcp\/\d+\.\d+\.\d+/);
    assert.deepEqual(seen.body, {
      model: 'gpt-test',
      messages: typed.conversation,
      max_tokens: 4096,
    });
    assert.ok(!('tools' in (seen.body as object)));
    assert.deepEqual(response, {
      content: DEFAULT_ANSWER,
      tool_calls: [],
      finish_reason: 'complete',
      provider_finish_reason: 'stop',
      usage: { input_tokens: response.usage!.input_tokens, output_tokens: response.usage!.output_tokens },
      model: 'gpt-test',
    });
    assert.equal(typeof response.usage.input_tokens, 'number');
    assert.equal(seen.answered, true);
    assert.equal(seen.closedEarly, false);
  });

  it('OpenRouter uses the same wire format', async () => {
    const config: ProviderConfig = providerConfigFor({ ...openai, kind: 'openrouter' });
    const response = await callProvider(config, request('hi [[echo]]', 'openrouter'), timeout());
    assert.equal(response.content, 'hi [[echo]]');
    assert.equal(last().path, '/v1/chat/completions');
  });

  it('a keyless local provider sends no Authorization header', async () => {
    await callProvider({ ...openai, apiKey: '' }, request('hi'), timeout());
    assert.equal(last().headers.authorization, undefined);
  });

  it('Anthropic Messages: headers, system text apart, user messages in order', async () => {
    const typed = request('Tell me. [[echo]]', 'anthropic', ['Additional caller instructions: be nice']);
    const response = await callProvider(anthropic, typed, timeout());
    const seen = last();
    assert.equal(seen.path, '/v1/messages');
    assert.equal(seen.headers['x-api-key'], KEY);
    assert.equal(seen.headers['anthropic-version'], '2023-06-01');
    assert.equal(seen.headers.authorization, undefined);
    assert.deepEqual(seen.body, {
      model: 'claude-test',
      max_tokens: 4096,
      system: SYSTEM_TEXT,
      messages: [
        { role: 'user', content: 'Additional caller instructions: be nice' },
        { role: 'user', content: 'Tell me. [[echo]]' },
      ],
    });
    assert.equal(response.content, 'Tell me. [[echo]]');
    assert.equal(response.finish_reason, 'complete');
    assert.equal(response.provider_finish_reason, 'end_turn');
    assert.match(String(seen.headers['user-agent']), /^symbi-mcp\//);
    assert.equal(response.model, 'claude-test');
  });

  it('Gemini generateContent: the model in the path, the key in x-goog-api-key and never in the URL, system text apart', async () => {
    const typed = request('Tell me. [[echo]]', 'gemini', ['Additional caller instructions: be nice']);
    const response = await callProvider(gemini, typed, timeout());
    const seen = last();
    assert.equal(seen.path, '/v1beta/models/gemini-test:generateContent');
    assert.equal(seen.headers['x-goog-api-key'], KEY);
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers['x-api-key'], undefined);
    assert.equal(seen.target, '/v1beta/models/gemini-test:generateContent', 'no query: the key is not in the URL');
    assert.deepEqual(seen.body, {
      systemInstruction: { parts: [{ text: SYSTEM_TEXT }] },
      contents: [{ role: 'user', parts: [{ text: 'Additional caller instructions: be nice' }, { text: 'Tell me. [[echo]]' }] }],
      generationConfig: { maxOutputTokens: 4096 },
    });
    assert.equal(response.content, 'Tell me. [[echo]]');
    assert.equal(response.finish_reason, 'complete');
    assert.equal(response.provider_finish_reason, 'STOP');
    assert.equal(response.model, 'gemini-test');
    assert.equal(typeof response.usage?.output_tokens, 'number');
  });

  it('a Gemini model name that would change the URL path is refused before any request', async () => {
    const before = endpoint.requests.length;
    for (const model of ['a/b', '..', 'm?key=x', 'm#x', 'gemini 3', 'm%2F']) {
      const typed = { ...request('hi', 'gemini'), options: { ...request('hi', 'gemini').options, model } };
      const error = await failure(callProvider({ ...gemini, model }, typed, timeout()));
      assert.equal(error.kind, 'malformed');
      assert.match(error.message, /cannot go into the request's URL path/);
    }
    assert.equal(endpoint.requests.length, before);
  });

  it('echo and secret answer what they promise', async () => {
    assert.equal((await callProvider(openai, request('repeat me [[echo]]'), timeout())).content, 'repeat me [[echo]]');
    assert.equal((await callProvider(openai, request('[[secret]]'), timeout())).content, SECRET_ANSWER);
  });

  it('tool calls are returned, not acted on (OpenAI and Anthropic)', async () => {
    const fromOpenAi = await callProvider(openai, request('[[tool-call]]'), timeout());
    assert.equal(fromOpenAi.tool_calls.length, 1);
    assert.equal(fromOpenAi.finish_reason, 'tool_use');
    assert.equal(fromOpenAi.provider_finish_reason, 'tool_calls');
    assert.equal(fromOpenAi.content, '');
    const fromAnthropic = await callProvider(anthropic, request('[[tool-call]]', 'anthropic'), timeout());
    assert.equal(fromAnthropic.tool_calls.length, 1);
    assert.equal((fromAnthropic.tool_calls[0] as { type: string }).type, 'tool_use');
    const fromGemini = await callProvider(gemini, request('[[tool-call]]', 'gemini'), timeout());
    assert.equal(fromGemini.finish_reason, 'tool_use');
    assert.deepEqual(fromGemini.tool_calls, [
      { type: 'functionCall', id: `call_synthetic_${last().id}`, name: 'run_shell_command', input: { command: 'ls -la' } },
    ]);
  });

  it('HTTP 500 is an http failure with the status, the URL and our words, never the body text', async () => {
    const error = await failure(callProvider(openai, request('[[http500]]'), timeout()));
    assert.equal(error.kind, 'http');
    assert.equal(error.status, 500);
    assert.match(error.message, /HTTP 500 from POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
    assert.match(error.message, /internal error \(the provider's identifiers are in the journal\)/);
    assert.ok(!error.message.includes('server_error'), 'the error type is kept for the journal, not the message');
    assert.equal(error.journalFields().error_type, 'server_error');
    assert.ok(!error.message.includes('synthetic internal server error'));
    // The provider's words are kept apart, for standard error only.
    assert.match(error.details.providerMessage ?? '', /synthetic internal server error/);
    assert.match(error.details.body?.sha256 ?? '', /^[0-9a-f]{64}$/);
  });

  it('malformed JSON with status 200 is a malformed failure that quotes no body text', async () => {
    const error = await failure(callProvider(openai, request('[[malformed]]'), timeout()));
    assert.equal(error.kind, 'malformed');
    assert.ok(!error.message.includes('chatcmpl'));
  });

  it('an oversize body is refused once the running cap passes, and reading stops early', async () => {
    const error = await failure(callProvider(openai, request('[[oversize]]'), timeout()));
    assert.equal(error.kind, 'oversize');

    // 64 MiB cannot all sit in socket buffers: the endpoint sees the client hang up mid-body.
    const big = await failure(callProvider(openai, request('[[oversize:64]]'), timeout()));
    assert.equal(big.kind, 'oversize');
    const seen = last();
    await endpoint.waitForIdle(10_000);
    assert.equal(seen.closedEarly, true);
    assert.equal(seen.answered, false);
    assert.ok(seen.bytesSent < 64 * MiB, `sent ${seen.bytesSent} bytes`);
  });

  it('a dripped body arrives whole', async () => {
    const response = await callProvider(openai, request('[[drip:2]]'), timeout());
    assert.equal(response.content, DEFAULT_ANSWER);
    assert.equal(last().answered, true);
  });

  it('a delayed answer arrives', async () => {
    const response = await callProvider(openai, request('[[delay:30]]'), timeout());
    assert.equal(response.content, DEFAULT_ANSWER);
  });

  it('aborting while the endpoint holds closes the connection', async () => {
    const controller = new AbortController();
    const before = endpoint.requests.length;
    const pending = callProvider(openai, request('wait for me [[hold]]'), controller.signal);
    await endpoint.waitForRequests(before + 1);
    const seen = endpoint.requests[before]!;
    assert.equal(seen.mode, 'hold');
    assert.equal(endpoint.openConnections(), 1);
    controller.abort(new Error('the caller cancelled'));
    const error = await failure(pending);
    assert.equal(error.kind, 'aborted');
    assert.match(error.message, /the caller cancelled/);
    await endpoint.waitForIdle(10_000);
    assert.equal(endpoint.openConnections(), 0);
    assert.equal(seen.closedEarly, true);
    assert.equal(seen.answered, false);
  });

  it('aborting mid-drip closes the connection too', async () => {
    const controller = new AbortController();
    const before = endpoint.requests.length;
    const pending = callProvider(openai, request('[[drip:50]]'), controller.signal);
    await endpoint.waitForRequests(before + 1);
    const seen = endpoint.requests[before]!;
    while (seen.bytesSent === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    assert.equal((await failure(pending)).kind, 'aborted');
    await endpoint.waitForIdle(10_000);
    assert.equal(seen.closedEarly, true);
  });

  it('releaseAll lets held requests answer', async () => {
    const before = endpoint.requests.length;
    const pending = Promise.all([callProvider(openai, request('[[hold]]'), timeout()), callProvider(anthropic, request('[[hold]]', 'anthropic'), timeout())]);
    await endpoint.waitForRequests(before + 2);
    // A request starts holding as soon as it is recorded, so both are held now.
    assert.equal(endpoint.releaseAll(), 2);
    const [first, second] = await pending;
    assert.equal(first.content, DEFAULT_ANSWER);
    assert.equal(second.content, DEFAULT_ANSWER);
  });

  it('an already aborted signal sends nothing', async () => {
    const before = endpoint.requests.length;
    const controller = new AbortController();
    controller.abort();
    assert.equal((await failure(callProvider(openai, request('hi'), controller.signal))).kind, 'aborted');
    assert.equal(endpoint.requests.length, before);
  });

  it('beforeAnswer runs before the answer leaves', async () => {
    const observed: number[] = [];
    const hooked = await startSyntheticEndpoint({
      beforeAnswer: (seen) => {
        observed.push(seen.id);
        assert.equal(seen.answered, false);
      },
    });
    try {
      const response = await callProvider({ ...openai, baseUrl: hooked.url }, request('hi'), timeout());
      assert.equal(response.content, DEFAULT_ANSWER);
      assert.deepEqual(observed, [1]);
    } finally {
      await hooked.close();
    }
  });

  it('a typed request for another provider kind is refused before any request', async () => {
    const before = endpoint.requests.length;
    assert.equal((await failure(callProvider(openai, request('hi', 'anthropic'), timeout()))).kind, 'malformed');
    assert.equal(endpoint.requests.length, before);
  });
});

describe('provider failures outside the synthetic modes', () => {
  let server: Server;
  let base: string;

  before(async () => {
    // Answers that a misbehaving provider could send: the key echoed back, a huge declared length, a redirect.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url?.startsWith('/echo-key')) {
          res.writeHead(401, { 'Content-Type': 'application/json', Connection: 'close' });
          const sent = [req.headers.authorization, req.headers['x-api-key'], req.headers['x-goog-api-key']].map(String).join(' ');
          res.end(JSON.stringify({ error: { message: `invalid key ${sent}` } }));
        } else if (req.url?.startsWith('/declared-huge')) {
          res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(5 * MiB), Connection: 'close' });
          res.write('{"choices":');
        } else if (req.url?.startsWith('/redirect')) {
          res.writeHead(307, { Location: 'http://127.0.0.1:1/elsewhere', Connection: 'close' });
          res.end();
        } else {
          res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' });
          res.end(JSON.stringify({ object: 'list', data: [] }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('an error body that echoes the key never carries it into the message', async () => {
    for (const kind of ['openai', 'anthropic', 'gemini'] as const) {
      const config: ProviderConfig = providerConfigFor({ kind, baseUrl: `${base}/echo-key`, model: 'm', apiKey: KEY });
      const error = await failure(callProvider(config, request('hi', kind), timeout()));
      assert.equal(error.kind, 'http');
      assert.equal(error.status, 401);
      assert.match(
        error.message,
        new RegExp(`the key in ${{ openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY', gemini: 'GEMINI_API_KEY' }[kind]} was refused`),
      );
      assert.ok(!error.message.includes(KEY));
      assert.match(error.details.providerMessage ?? '', /\[redacted\]/);
      assert.ok(!(error.details.providerMessage ?? '').includes(KEY));
    }
  });

  it('a declared length over the cap is refused before reading', async () => {
    const config: ProviderConfig = providerConfigFor({ kind: 'openai', baseUrl: `${base}/declared-huge`, model: 'm', apiKey: KEY });
    assert.equal((await failure(callProvider(config, request('hi'), timeout()))).kind, 'oversize');
  });

  it('redirects are not followed', async () => {
    const config: ProviderConfig = providerConfigFor({ kind: 'openai', baseUrl: `${base}/redirect`, model: 'm', apiKey: KEY });
    const error = await failure(callProvider(config, request('hi'), timeout()));
    assert.equal(error.kind, 'http');
    assert.equal(error.status, 307);
  });

  it('JSON that is not a completion is malformed', async () => {
    const config: ProviderConfig = providerConfigFor({ kind: 'openai', baseUrl: `${base}/list`, model: 'm', apiKey: KEY });
    assert.equal((await failure(callProvider(config, request('hi'), timeout()))).kind, 'malformed');
  });

  it('an unreachable provider is a network failure naming the address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const config: ProviderConfig = providerConfigFor({ kind: 'openai', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', apiKey: KEY });
    const error = await failure(callProvider(config, request('hi'), timeout()));
    assert.equal(error.kind, 'network');
    assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
  });

  it('a key that cannot travel in a header is refused without quoting it', async () => {
    const config: ProviderConfig = providerConfigFor({ kind: 'openai', baseUrl: `${base}/v1`, model: 'm', apiKey: `${KEY}\r\nX: y` });
    const error = await failure(callProvider(config, request('hi'), timeout()));
    assert.ok(!error.message.includes('SENTINEL'));
  });
});

describe('response parsing', () => {
  it('OpenAI: refusal text, content parts, legacy function_call, missing fields', () => {
    const refusal = parseOpenAiChatResponse({ choices: [{ message: { content: null, refusal: 'I cannot.' }, finish_reason: 'stop' }] });
    assert.equal(refusal.content, '');
    assert.equal(refusal.finish_reason, 'refused');
    assert.equal(refusal.usage, null);
    assert.equal(refusal.model, null);
    const parts = parseOpenAiChatResponse({
      choices: [
        {
          message: {
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        },
      ],
    });
    assert.equal(parts.content, 'ab');
    // A missing finish reason (a local server) counts as complete.
    assert.equal(parts.finish_reason, 'complete');
    assert.equal(parts.provider_finish_reason, null);
    const legacy = parseOpenAiChatResponse({ choices: [{ message: { content: null, function_call: { name: 'f', arguments: '{}' } } }] });
    assert.equal(legacy.tool_calls.length, 1);
    for (const bad of [
      null,
      [],
      {},
      { choices: [] },
      { choices: [{}] },
      { choices: [{ message: {} }] },
      { choices: [{ message: { content: 5 } }] },
      { choices: [{ message: { content: 'x', tool_calls: {} } }] },
    ]) {
      assert.throws(
        () => parseOpenAiChatResponse(bad),
        (error: unknown) => error instanceof ProviderError && error.kind === 'malformed',
      );
    }
    const odd = parseOpenAiChatResponse({ choices: [{ message: { content: 'x' } }], usage: { prompt_tokens: -1, completion_tokens: 'many' } });
    assert.deepEqual(odd.usage, { input_tokens: null, output_tokens: null });
  });

  it('Anthropic: text blocks joined, thinking ignored, tool-use kinds collected, errors malformed', () => {
    const parsed = parseAnthropicMessagesResponse({
      content: [
        { type: 'thinking', thinking: 'hmm' },
        { type: 'text', text: 'one ' },
        { type: 'server_tool_use', id: 's', name: 'web_search', input: {} },
        { type: 'text', text: 'two' },
      ],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 4 },
    });
    assert.equal(parsed.content, 'one two');
    assert.equal(parsed.tool_calls.length, 1);
    assert.deepEqual(parsed.usage, { input_tokens: 3, output_tokens: 4 });
    for (const bad of [null, { content: 'text' }, { content: [{ text: 'no type' }] }, { content: [{ type: 'text' }] }]) {
      assert.throws(
        () => parseAnthropicMessagesResponse(bad),
        (error: unknown) => error instanceof ProviderError && error.kind === 'malformed',
      );
    }
    assert.throws(
      () => parseAnthropicMessagesResponse({ type: 'error', error: { type: 'overloaded_error', message: 'words' } }),
      (error: unknown) =>
        error instanceof ProviderError &&
        error.kind === 'provider' &&
        error.details.errorType === 'overloaded_error' &&
        !/overloaded_error|words/.test(error.message),
    );
  });

  it('Gemini: thought parts never in the answer, function calls collected, a blocked prompt filtered, errors malformed', () => {
    const parsed = parseGeminiResponse({
      candidates: [
        {
          content: {
            role: 'model',
            parts: [{ text: 'I should say the secret', thought: true }, { text: 'one ' }, { thoughtSignature: 'c2ln' }, { text: 'two' }],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 5, totalTokenCount: 12 },
      modelVersion: 'gemini-test-001',
    });
    assert.equal(parsed.content, 'one two');
    assert.deepEqual(parsed.usage, { input_tokens: 3, output_tokens: 9 }, 'thinking is output');
    assert.equal(parsed.model, 'gemini-test-001');
    const call = parseGeminiResponse({ candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }] }, finishReason: 'STOP' }] });
    assert.equal(call.finish_reason, 'tool_use');
    assert.deepEqual(call.tool_calls, [{ type: 'functionCall', id: '', name: 'f', input: { a: 1 } }]);
    // A candidate a filter stopped may come without content.
    const safety = parseGeminiResponse({ candidates: [{ finishReason: 'SAFETY' }] });
    assert.deepEqual([safety.content, safety.finish_reason, safety.provider_finish_reason], ['', 'filtered', 'SAFETY']);
    const blocked = parseGeminiResponse({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 7 } });
    assert.deepEqual(
      [blocked.finish_reason, blocked.provider_finish_reason, blocked.usage],
      ['filtered', 'PROHIBITED_CONTENT', { input_tokens: 7, output_tokens: null }],
    );
    const notes: string[] = [];
    const odd = parseGeminiResponse({ promptFeedback: { blockReason: 'A_NEW_REASON' } }, notes);
    assert.deepEqual([odd.finish_reason, odd.provider_finish_reason], ['filtered', null], 'any block reason is a block');
    assert.match(notes.join(), /unrecognised finish reason "A_NEW_REASON"/);
    for (const bad of [
      null,
      {},
      { candidates: 'x' },
      { candidates: [] },
      { candidates: [5] },
      { candidates: [{ content: 'x' }] },
      { candidates: [{ content: { parts: {} } }] },
      { candidates: [{ content: { parts: [5] } }] },
      { candidates: [{ content: { parts: [{ text: 5 }] } }] },
    ]) {
      assert.throws(
        () => parseGeminiResponse(bad),
        (error: unknown) => error instanceof ProviderError && error.kind === 'malformed' && /not a Gemini generateContent answer/.test(error.message),
        JSON.stringify(bad),
      );
    }
    assert.throws(
      () => parseGeminiResponse({ error: { code: 503, message: 'words', status: 'UNAVAILABLE' } }),
      (error: unknown) =>
        error instanceof ProviderError && error.kind === 'provider' && error.details.errorType === 'UNAVAILABLE' && !/words/.test(error.message),
    );
  });
});

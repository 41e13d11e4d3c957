// The synthetic endpoint the tests, benchmarks and stress runs use: the demo's endpoint
// (src/demo/synthetic-endpoint.ts: fixed, echo, delay, hold, secret) plus the failure and provider-case
// modes below, which live here so that the package never ships them.
//
//   tool-call      answer with a proposed tool call
//   oversize[:MiB] a valid answer whose body is MiB mebibytes (default 5), sent chunked
//   http500        HTTP 500 with an error body
//   malformed      HTTP 200 with a body that is not JSON
//   drip:MS        the fixed answer, written a few bytes at a time with MS ms between writes
//
// Provider cases from the OpenAI, OpenRouter, Anthropic and Google documentation, in each wire format
// (WIRE_CASES: one entry per wire format, so a new one does not compile without its cases). Model
// text that must never be released contains PARTIAL_MODEL_TEXT; provider error text contains
// PROVIDER_ERROR_TEXT; an echoed prompt stands for a provider that quotes the request back.
//   finish:VALUE[,empty|,blank]  the answer with that finish_reason / stop_reason / finishReason (length,
//                  content_filter, max_tokens, refusal, pause_turn, MAX_TOKENS, SAFETY, ...), partial text
//                  (or none with `empty`, as a reasoning model that spent its budget thinking, or only
//                  white space with `blank`); the values stop, end_turn, stop_sequence and STOP carry the
//                  whole fixed answer (unless empty or blank), and `none` leaves the reason out
//                  (OpenAI and Gemini wire) or null (Anthropic wire) with the fixed answer
//   refusal        OpenAI: message.refusal with content null; Anthropic: stop_reason "refusal";
//                  Gemini (which has no refusal of its own): as blocked
//   refusal-part   OpenAI: a content part of type "refusal"; otherwise as refusal
//   blocked[:REASON] a prompt blocked before any answer: Gemini's promptFeedback.blockReason (default
//                  SAFETY) with no candidates; OpenAI: finish_reason content_filter with no text;
//                  Anthropic: stop_reason refusal with no text
//   thought        Gemini: the fixed answer after a part with `thought: true` holding PARTIAL_MODEL_TEXT;
//                  otherwise the fixed answer
//   choice-error   OpenRouter: finish_reason "error" with a choice-level error object (otherwise as error-in-200)
//   error-in-200   a top-level error object inside an HTTP 200 answer
//   http:OPTIONS   an HTTP error in the wire format's error shape, with a request id header where the
//                  wire format has one. OPTIONS is a comma list: code=N (default 500), times=K (fail the
//                  first K requests carrying this prompt, then answer), retry_after=S, retry_after_ms=MS,
//                  echo (quote the prompt); Gemini's body also takes status=S (its canonical status,
//                  else the one Google documents for the code), reason=R (an ErrorInfo detail) and
//                  retry_delay=D (a RetryInfo detail, "30s")
//   reset[:times=K] close the connection without sending a byte (the first K times, else always)
//   echo-auth[:split|:tool-id|:tool-name|:tool-args] an answer quoting the request's credential (as
//                  its wire format sends it: Authorization, x-api-key, x-goog-api-key) as a provider
//                  that echoes headers would; `split` breaks the key by a newline and upper-cases the
//                  words around it; the `tool-` forms put it in a proposed tool call's id, name or
//                  arguments instead
//   key-identifiers HTTP 400 whose request id header (where there is one), error type (or status and
//                  reason) and param are the request's key
//   key-error      HTTP 401 whose error message carries the request's key split by a newline
//   reasoning-model OpenAI wire: HTTP 400 "unsupported_parameter" (param max_tokens) when the body
//                  carries max_tokens, as OpenAI's reasoning models answer; else the fixed answer
//
// A hostile provider, trying to make the run's own journal fail verification:
//   surrogate:text|args  an answer whose text ("a \ud800 b"), or whose tool call's arguments, hold an
//                  unpaired UTF-16 surrogate, as a JSON escape
//   huge-usage     the fixed answer reporting 2^53-1 prompt and 2^53-1 completion tokens
//   error-code:N   HTTP 200 with the body {"error":{"code":N}} (N may be negative)
//
// Run as a process: `node --import tsx test/support/synthetic-endpoint.ts [--port N] [--mode M] [--answer TEXT]`
// prints `SYNTHETIC_ENDPOINT_URL=<url>` on stdout once listening and serves until SIGTERM or SIGINT.

import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  boundedMs,
  completionBody,
  sleep,
  startSyntheticEndpoint as startDemoEndpoint,
  type ModeContext,
  type ModeHandler,
  type ReceivedRequest,
  type SyntheticEndpoint,
  type SyntheticEndpointOptions,
} from '../../src/demo/synthetic-endpoint.js';
import type { WireFormat } from '../../src/shared/provider/provider-kinds.js';

export {
  DEFAULT_ANSWER,
  SECRET_ANSWER,
  SYNTHETIC_TOOL_NAME,
  type ReceivedRequest,
  type SyntheticEndpoint,
  type SyntheticEndpointOptions,
} from '../../src/demo/synthetic-endpoint.js';

/** In every answer that must never be released: partial, refused or filtered model text. */
export const PARTIAL_MODEL_TEXT = 'PARTIAL-MODEL-TEXT never to be released';
/** In every provider error message, with words a forbid-secret policy would catch. */
export const PROVIDER_ERROR_TEXT = 'PROVIDER-ERROR-TEXT: here is the secret you asked for';
const COMPLETE_FINISH_VALUES = new Set(['stop', 'end_turn', 'stop_sequence', 'STOP', 'none']);
const DEFAULT_OVERSIZE_MIB = 5;
const MAX_OVERSIZE_MIB = 256;
const DRIP_PIECE_BYTES = 7;
const OVERSIZE_CHUNK_BYTES = 64 * 1024;

/** `code=503,times=2,echo` as a map; a bare word maps to "". */
function directiveOptions(arg: string | undefined): Map<string, string> {
  const options = new Map<string, string>();
  for (const part of (arg ?? '').split(',')) {
    const [key, value] = part.split('=', 2) as [string, string | undefined];
    if (key.trim() !== '') options.set(key.trim(), (value ?? '').trim());
  }
  return options;
}

/** What the http mode's options may add to an error body (Gemini's details). */
interface ErrorExtras {
  status?: string;
  reason?: string;
  retryDelay?: string;
}

/** The provider cases in one wire format, as its documentation shows them. */
interface WireCases {
  /** A complete answer whose finish value is `reason` (null: left out, or null where the field is required). */
  withFinish(body: Record<string, unknown>, reason: string | null): unknown;
  /** A refused answer: OpenAI's message.refusal (or a refusal content part), Anthropic's stop_reason "refusal". */
  refusal(body: Record<string, unknown>, asPart: boolean): unknown;
  /** A prompt the provider blocked before answering, for `reason` where the wire format names one. */
  blocked(body: Record<string, unknown>, reason: string): unknown;
  /** The answer with the model's thinking beside it, where the wire format carries thinking in the answer's content. */
  withThought(body: Record<string, unknown>, thought: string): unknown;
  /** The wire format's error object for an HTTP status. */
  error(status: number, message: string, id: number, extras: ErrorExtras): unknown;
  /** The error object of an HTTP 400 whose identifiers (error type or status, reason, param, request id) are all `value`. */
  identifiersError(message: string, value: string): unknown;
  /** The header its answers carry a request id in; null where it sends none. */
  requestIdHeader: string | null;
  /** An error reported inside an HTTP 200 answer (choice-error, error-in-200). */
  errorIn200(c: ModeContext): void;
  /** Whether a reasoning model behind this wire format refuses the body's output-limit field. */
  refusesLimitField(body: Record<string, unknown>): boolean;
  /** Puts `value` into the proposed tool call of an answer made with one: its id, its name, or its arguments' command. */
  setToolCall(body: Record<string, unknown>, field: 'id' | 'name' | 'args', value: string): void;
  /** The answer's usage, set to `tokens` input and `tokens` output tokens. */
  setUsage(body: Record<string, unknown>, tokens: number): void;
}

// Google's canonical status for each HTTP status it documents (https://ai.google.dev/gemini-api/docs/troubleshooting).
const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Gemini's answer to a prompt its filters blocked: no candidates, the reason in promptFeedback. */
function geminiBlocked(body: Record<string, unknown>, reason: string): unknown {
  const promptTokens = (body.usageMetadata as { promptTokenCount: number }).promptTokenCount;
  return {
    promptFeedback: { blockReason: reason, safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH' }] },
    usageMetadata: { promptTokenCount: promptTokens, totalTokenCount: promptTokens },
    modelVersion: body.modelVersion,
  };
}

const firstChoice = (body: Record<string, unknown>): Record<string, unknown> => (body.choices as Record<string, unknown>[])[0]!;
const firstCandidate = (body: Record<string, unknown>): Record<string, unknown> => (body.candidates as Record<string, unknown>[])[0]!;
const geminiParts = (body: Record<string, unknown>): Record<string, unknown>[] => (firstCandidate(body).content as { parts: Record<string, unknown>[] }).parts;

// One set of cases per wire format: a wire format the endpoint cannot simulate does not compile.
const WIRE_CASES: Readonly<Record<WireFormat, WireCases>> = {
  'openai-chat': {
    withFinish: (body, reason) => {
      const choice = firstChoice(body);
      if (reason === null) delete choice.finish_reason;
      else choice.finish_reason = reason;
      return body;
    },
    refusal: (body, asPart) => {
      firstChoice(body).message = asPart
        ? { role: 'assistant', content: [{ type: 'refusal', refusal: PARTIAL_MODEL_TEXT }], refusal: null }
        : { role: 'assistant', content: null, refusal: PARTIAL_MODEL_TEXT };
      return body;
    },
    blocked: (body) => {
      Object.assign(firstChoice(body), { message: { role: 'assistant', content: '' }, finish_reason: 'content_filter' });
      return body;
    },
    withThought: (body) => body,
    error: (status, message) => {
      const code = status === 404 ? 'model_not_found' : status === 429 ? 'rate_limit_exceeded' : null;
      const type = status >= 500 ? 'server_error' : 'invalid_request_error';
      return { error: { message, type, param: null, code } };
    },
    identifiersError: (message, value) => ({ error: { message, type: value, param: value, code: null } }),
    requestIdHeader: 'x-request-id',
    errorIn200: (c) => {
      // OpenRouter's shapes: a top-level error object, or a choice that failed mid-generation.
      const error = { code: 502, message: PROVIDER_ERROR_TEXT, metadata: { provider_name: 'synthetic' } };
      const body =
        c.mode === 'error-in-200'
          ? { error }
          : {
              ...(completionBody('openai-chat', c.record.id, c.model, c.prompt, '', false) as object),
              choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'error', error }],
            };
      c.send(200, JSON.stringify(body), requestIdHeaders(c.record, `gen-synthetic-${c.record.id}`));
    },
    refusesLimitField: (body) => 'max_tokens' in body,
    setToolCall: (body, field, value) => {
      const call = (firstChoice(body).message as { tool_calls: { id: string; function: { name: string; arguments: string } }[] }).tool_calls[0]!;
      if (field === 'id') call.id = `call_${value}`;
      else if (field === 'name') call.function.name = `run_${value}`;
      // The arguments string itself holds the value (JSON.stringify of an object would escape a lone surrogate inside).
      else call.function.arguments = `{"command":"${value}"}`;
    },
    setUsage: (body, tokens) => {
      body.usage = { prompt_tokens: tokens, completion_tokens: tokens, total_tokens: tokens };
    },
  },
  'anthropic-messages': {
    withFinish: (body, reason) => ({ ...body, stop_reason: reason }),
    refusal: (body) => ({ ...body, stop_reason: 'refusal' }),
    blocked: (body) => ({ ...body, content: [], stop_reason: 'refusal' }),
    withThought: (body) => body,
    error: (status, message, id) => {
      const type =
        status === 429
          ? 'rate_limit_error'
          : status === 529
            ? 'overloaded_error'
            : status === 404
              ? 'not_found_error'
              : status === 401
                ? 'authentication_error'
                : status >= 500
                  ? 'api_error'
                  : 'invalid_request_error';
      return { type: 'error', error: { type, message }, request_id: `req_synthetic_${id}` };
    },
    identifiersError: (message, value) => ({ type: 'error', error: { type: value, message }, request_id: value }),
    requestIdHeader: 'request-id',
    errorIn200: (c) => {
      c.send(200, JSON.stringify(WIRE_CASES['anthropic-messages'].error(c.mode === 'choice-error' ? 500 : 529, PROVIDER_ERROR_TEXT, c.record.id, {})));
    },
    // Anthropic's output limit is always max_tokens.
    refusesLimitField: () => false,
    setToolCall: (body, field, value) => {
      const call = (body.content as { type: string; id?: string; name?: string; input?: unknown }[]).find((block) => block.type === 'tool_use')!;
      if (field === 'id') call.id = `toolu_${value}`;
      else if (field === 'name') call.name = `run_${value}`;
      else call.input = { command: value };
    },
    setUsage: (body, tokens) => {
      body.usage = { input_tokens: tokens, output_tokens: tokens };
    },
  },
  'gemini-generate-content': {
    withFinish: (body, reason) => {
      const candidate = firstCandidate(body);
      if (reason === null) delete candidate.finishReason;
      else candidate.finishReason = reason;
      return body;
    },
    // Gemini has no refusal of its own: what stands for one is a blocked prompt.
    refusal: (body) => geminiBlocked(body, 'SAFETY'),
    blocked: geminiBlocked,
    withThought: (body, thought) => {
      geminiParts(body).unshift({ text: thought, thought: true });
      return body;
    },
    error: (status, message, _id, extras) => {
      const details: unknown[] = [];
      if (extras.reason !== undefined) {
        details.push({
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: extras.reason,
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        });
      }
      if (extras.retryDelay !== undefined) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: extras.retryDelay });
      return { error: { code: status, message, status: extras.status ?? GOOGLE_STATUS[status] ?? 'UNKNOWN', ...(details.length > 0 ? { details } : {}) } };
    },
    identifiersError: (message, value) => ({
      error: { code: 400, message, status: value, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: value, domain: value }] },
    }),
    // Google's answers carry no request id header of their own.
    requestIdHeader: null,
    errorIn200: (c) => {
      // A gateway in front of the API that answers 200 with Google's error body.
      c.send(200, JSON.stringify(WIRE_CASES['gemini-generate-content'].error(c.mode === 'choice-error' ? 500 : 503, PROVIDER_ERROR_TEXT, c.record.id, {})));
    },
    // Gemini's output limit is always generationConfig.maxOutputTokens.
    refusesLimitField: () => false,
    setToolCall: (body, field, value) => {
      const call = geminiParts(body).find((part) => part.functionCall !== undefined)!.functionCall as { id: string; name: string; args: unknown };
      if (field === 'id') call.id = `call_${value}`;
      else if (field === 'name') call.name = `run_${value}`;
      else call.args = { command: value };
    },
    setUsage: (body, tokens) => {
      body.usageMetadata = { promptTokenCount: tokens, candidatesTokenCount: tokens, totalTokenCount: tokens };
    },
  },
};

function finishBody(format: WireFormat, id: number, model: string, arg: string | undefined, fixedAnswer: string): unknown {
  const [value, flag] = (arg ?? 'length').split(',') as [string, string | undefined];
  const complete = COMPLETE_FINISH_VALUES.has(value);
  const text = flag === 'empty' ? '' : flag === 'blank' ? ' \n\t\u3000\u0085 ' : complete ? fixedAnswer : PARTIAL_MODEL_TEXT;
  const body = completionBody(format, id, model, '', text, false) as Record<string, unknown>;
  return WIRE_CASES[format].withFinish(body, value === 'none' ? null : value);
}

function refusalBody(format: WireFormat, id: number, model: string, asPart: boolean): unknown {
  return WIRE_CASES[format].refusal(completionBody(format, id, model, '', PARTIAL_MODEL_TEXT, false) as Record<string, unknown>, asPart);
}

/** The wire format's error object: OpenAI {error: {message, type, code}}, Anthropic {type: "error", error, request_id}, Google {error: {code, message, status, details}}. */
function errorBody(format: WireFormat, status: number, message: string, id: number, extras: ErrorExtras = {}): unknown {
  return WIRE_CASES[format].error(status, message, id, extras);
}

/** `key` broken by a newline in its middle. */
function splitByNewline(key: string): string {
  const half = Math.floor(key.length / 2);
  return `${key.slice(0, half)}\n${key.slice(half)}`;
}

/** The request id header of the record's wire format with `value`, or none where the wire format has no such header. */
function requestIdHeaders(record: ReceivedRequest, value: string): Record<string, string> {
  const header = WIRE_CASES[record.format].requestIdHeader;
  return header === null ? {} : { [header]: value };
}

/** A valid completion whose text fills `size` bytes; no Content-Length, so only a running cap can stop it. */
async function sendOversize(c: ModeContext, size: number): Promise<void> {
  const { record, res } = c;
  const template = JSON.stringify(completionBody(record.format, record.id, c.model, c.prompt, '\u0000FILL\u0000', false));
  const [head, tail] = template.split('\\u0000FILL\\u0000') as [string, string];
  res.writeHead(200, c.headers);
  const write = async (chunk: string): Promise<boolean> => {
    if (c.isClosed()) return false;
    record.bytesSent += Buffer.byteLength(chunk);
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
    return !c.isClosed();
  };
  if (!(await write(head))) return;
  let remaining = size - Buffer.byteLength(head) - Buffer.byteLength(tail);
  const filler = 'x'.repeat(OVERSIZE_CHUNK_BYTES);
  while (remaining > 0) {
    const piece = remaining >= filler.length ? filler : filler.slice(0, remaining);
    remaining -= piece.length;
    if (!(await write(piece))) return;
  }
  if (!(await write(tail))) return;
  res.end();
}

async function sendDrip(c: ModeContext, text: string, pauseMs: number): Promise<void> {
  const { record, res } = c;
  const bytes = Buffer.from(text, 'utf8');
  res.writeHead(200, { ...c.headers, 'Content-Length': String(bytes.byteLength) });
  for (let offset = 0; offset < bytes.byteLength; offset += DRIP_PIECE_BYTES) {
    if (c.isClosed()) return;
    const piece = bytes.subarray(offset, offset + DRIP_PIECE_BYTES);
    record.bytesSent += piece.byteLength;
    res.write(piece);
    if (offset + DRIP_PIECE_BYTES < bytes.byteLength) await sleep(pauseMs, c.closed);
  }
  if (!c.isClosed()) res.end();
}

const providerError: ModeHandler = (c) => {
  WIRE_CASES[c.record.format].errorIn200(c);
  return 'answered';
};

const refusal: ModeHandler = (c) => {
  c.send(200, JSON.stringify(refusalBody(c.record.format, c.record.id, c.model, c.mode === 'refusal-part')));
  return 'answered';
};

/** A proposed tool call whose id, name or arguments (`field`) hold `value`. */
function toolCallWith(format: WireFormat, id: number, model: string, field: 'id' | 'name' | 'args', value: string): unknown {
  const body = completionBody(format, id, model, '', '', true) as Record<string, unknown>;
  WIRE_CASES[format].setToolCall(body, field, value);
  return body;
}

/** The text of the `surrogate` mode: a lone high surrogate between two words. */
export const LONE_SURROGATE_TEXT = 'a \ud800 b';

/** A complete answer whose text, or whose one tool call's arguments, hold LONE_SURROGATE_TEXT. */
function surrogateBody(format: WireFormat, id: number, model: string, where: string | undefined): unknown {
  if (where !== 'args') return completionBody(format, id, model, '', LONE_SURROGATE_TEXT, false);
  return toolCallWith(format, id, model, 'args', LONE_SURROGATE_TEXT);
}

/** The failure and provider-case modes, by name; a handler returning 'normal' lets the fixed answer through. */
export const TEST_MODES: Readonly<Record<string, ModeHandler>> = {
  finish: (c) => {
    c.send(200, JSON.stringify(finishBody(c.record.format, c.record.id, c.model, c.arg, c.fixedAnswer)));
    return 'answered';
  },
  refusal,
  'refusal-part': refusal,
  blocked: (c) => {
    const body = completionBody(c.record.format, c.record.id, c.model, c.prompt, '', false) as Record<string, unknown>;
    c.send(200, JSON.stringify(WIRE_CASES[c.record.format].blocked(body, c.arg ?? 'SAFETY')));
    return 'answered';
  },
  thought: (c) => {
    const body = completionBody(c.record.format, c.record.id, c.model, c.prompt, c.fixedAnswer, false) as Record<string, unknown>;
    c.send(200, JSON.stringify(WIRE_CASES[c.record.format].withThought(body, PARTIAL_MODEL_TEXT)));
    return 'answered';
  },
  'choice-error': providerError,
  'error-in-200': providerError,
  http: (c) => {
    const options = directiveOptions(c.arg);
    if (!c.failThisTime(`${c.mode}:${c.arg ?? ''}:${c.prompt}`, options.get('times'))) return 'normal';
    const status = Number(options.get('code') ?? '500');
    const extra: Record<string, string> = requestIdHeaders(c.record, `req_synthetic_${c.record.id}`);
    if (options.has('retry_after')) extra['Retry-After'] = options.get('retry_after')!;
    if (options.has('retry_after_ms')) extra['retry-after-ms'] = options.get('retry_after_ms')!;
    const message = options.has('echo') ? `${PROVIDER_ERROR_TEXT}; you sent: ${c.prompt}` : PROVIDER_ERROR_TEXT;
    const extras: ErrorExtras = {};
    if (options.has('status')) extras.status = options.get('status')!;
    if (options.has('reason')) extras.reason = options.get('reason')!;
    if (options.has('retry_delay')) extras.retryDelay = options.get('retry_delay')!;
    c.send(
      Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500,
      JSON.stringify(errorBody(c.record.format, status, message, c.record.id, extras)),
      extra,
    );
    return 'answered';
  },
  'echo-auth': (c) => {
    const key = c.key;
    const field = c.arg?.startsWith('tool-') === true ? c.arg.slice('tool-'.length) : undefined;
    if (field === 'id' || field === 'name' || field === 'args') {
      c.send(200, JSON.stringify(toolCallWith(c.record.format, c.record.id, c.model, field, field === 'args' ? `Bearer ${key}` : key)));
      return 'answered';
    }
    const text = c.arg === 'split' ? `YOUR HEADER WAS: BEARER ${splitByNewline(key)} (ECHOED)` : `Your header was: Authorization: Bearer ${key}`;
    c.send(200, JSON.stringify(completionBody(c.record.format, c.record.id, c.model, c.prompt, text, false)));
    return 'answered';
  },
  'key-identifiers': (c) => {
    c.send(400, JSON.stringify(WIRE_CASES[c.record.format].identifiersError(PROVIDER_ERROR_TEXT, c.key)), requestIdHeaders(c.record, c.key));
    return 'answered';
  },
  'key-error': (c) => {
    const message = `Incorrect API key provided: ${splitByNewline(c.key)}. You can find your key in your account settings.`;
    c.send(401, JSON.stringify(errorBody(c.record.format, 401, message, c.record.id)), requestIdHeaders(c.record, `req_synthetic_${c.record.id}`));
    return 'answered';
  },
  surrogate: (c) => {
    // JSON.stringify writes the lone surrogate as the escape \ud800, which JSON.parse reads back as one.
    c.send(200, JSON.stringify(surrogateBody(c.record.format, c.record.id, c.model, c.arg)));
    return 'answered';
  },
  'huge-usage': (c) => {
    const body = completionBody(c.record.format, c.record.id, c.model, c.prompt, c.fixedAnswer, false) as Record<string, unknown>;
    WIRE_CASES[c.record.format].setUsage(body, Number.MAX_SAFE_INTEGER);
    c.send(200, JSON.stringify(body));
    return 'answered';
  },
  'error-code': (c) => {
    c.send(200, JSON.stringify({ error: { code: Number(c.arg ?? '-1') } }));
    return 'answered';
  },
  'reasoning-model': (c) => {
    const body = c.record.body as Record<string, unknown>;
    if (!WIRE_CASES[c.record.format].refusesLimitField(body)) return 'normal';
    const error = {
      message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      type: 'invalid_request_error',
      param: 'max_tokens',
      code: 'unsupported_parameter',
    };
    c.send(400, JSON.stringify({ error }), requestIdHeaders(c.record, `req_synthetic_${c.record.id}`));
    return 'answered';
  },
  reset: (c) => {
    if (!c.failThisTime(`${c.mode}:${c.arg ?? ''}:${c.prompt}`, directiveOptions(c.arg).get('times'))) return 'normal';
    // No byte of an answer: the client sees the connection reset.
    c.res.socket?.destroy();
    return 'answered';
  },
  http500: (c) => {
    c.send(500, JSON.stringify({ error: { message: 'synthetic internal server error', type: 'server_error', code: null } }));
    return 'answered';
  },
  malformed: (c) => {
    c.send(200, '{"id": "chatcmpl-synthetic", "object": "chat.completion", "choices": [{"message": {"role": "assistant", "content": "cut');
    return 'answered';
  },
  'tool-call': (c) => {
    c.send(200, JSON.stringify(completionBody(c.record.format, c.record.id, c.model, c.prompt, 'I will run a command for you.', true)));
    return 'answered';
  },
  oversize: async (c): Promise<'answered'> => {
    const mib = Math.min(Math.max(Number(c.arg ?? DEFAULT_OVERSIZE_MIB) || DEFAULT_OVERSIZE_MIB, 1), MAX_OVERSIZE_MIB);
    await sendOversize(c, mib * 1024 * 1024);
    return 'answered';
  },
  drip: async (c): Promise<'answered'> => {
    const text = JSON.stringify(completionBody(c.record.format, c.record.id, c.model, c.prompt, c.fixedAnswer, false));
    await sendDrip(c, text, boundedMs(c.arg, 10));
    return 'answered';
  },
};

/** The synthetic endpoint with every mode, the demo's and the test modes above. */
export function startSyntheticEndpoint(options: SyntheticEndpointOptions = {}): Promise<SyntheticEndpoint> {
  return startDemoEndpoint({ ...options, modes: { ...TEST_MODES, ...options.modes } });
}

function parseArguments(argv: string[]): SyntheticEndpointOptions {
  const options: SyntheticEndpointOptions = {};
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--port' && value !== undefined && /^\d+$/.test(value) && Number(value) <= 65535) options.port = Number(value);
    else if (flag === '--mode' && value !== undefined) options.defaultMode = value;
    else if (flag === '--answer' && value !== undefined) options.answer = value;
    else if (flag === '--host' && value !== undefined) options.host = value;
    else throw new Error(`bad argument ${flag ?? ''} (allowed: --port N, --mode MODE, --answer TEXT, --host ADDRESS)`);
    i += 1;
  }
  return options;
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isMainModule()) {
  try {
    const endpoint = await startSyntheticEndpoint(parseArguments(process.argv.slice(2)));
    process.stdout.write(`SYNTHETIC_ENDPOINT_URL=${endpoint.url}\n`);
    const stop = (): void => {
      void endpoint.close().then(() => process.exit(0));
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  } catch (error) {
    process.stderr.write(`synthetic-endpoint: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

// A local inference endpoint for tests, the demo and the stress runs. It speaks OpenAI Chat Completions
// (any POST path ending in /chat/completions) and Anthropic Messages (any POST path ending in /messages).
//
// The behaviour is picked per request by a directive anywhere in the LAST user message, `[[mode]]` or
// `[[mode:arg]]`, else by the default mode:
//   fixed[:text]   answer a fixed text (default "Hello from the synthetic endpoint.")
//   echo           answer the last user message
//   delay:MS       wait MS milliseconds, then answer the fixed text
//   hold[:MS]      wait until releaseAll() (or POST /_control/release), the client disconnects, or MS pass
//   tool-call      answer with a proposed tool call
//   oversize[:MiB] a valid answer whose body is MiB mebibytes (default 5), sent chunked
//   http500        HTTP 500 with an error body
//   malformed      HTTP 200 with a body that is not JSON
//   drip:MS        the fixed answer, written a few bytes at a time with MS ms between writes
//   secret         an answer containing the word "secret"
//
// Provider cases from the OpenAI, OpenRouter and Anthropic documentation, in each wire format. Model
// text that must never be released contains PARTIAL_MODEL_TEXT; provider error text contains
// PROVIDER_ERROR_TEXT; an echoed prompt stands for a provider that quotes the request back.
//   finish:VALUE[,empty]  the answer with that finish_reason / stop_reason (length, content_filter,
//                  max_tokens, refusal, pause_turn, model_context_window_exceeded, ...), partial text
//                  (or none with `empty`, as a reasoning model that spent its budget thinking); the
//                  values stop, end_turn and stop_sequence carry the whole fixed answer, and `none`
//                  leaves the reason out (OpenAI wire) or null (Anthropic wire) with the fixed answer
//   refusal        OpenAI: message.refusal with content null; Anthropic: stop_reason "refusal"
//   refusal-part   OpenAI: a content part of type "refusal"; Anthropic: as refusal
//   choice-error   OpenRouter: finish_reason "error" with a choice-level error object (Anthropic: as error-in-200)
//   error-in-200   a top-level error object inside an HTTP 200 answer
//   http:OPTIONS   an HTTP error in the wire format's error shape, with a request id header. OPTIONS is a
//                  comma list: code=N (default 500), times=K (fail the first K requests carrying this
//                  prompt, then answer), retry_after=S, retry_after_ms=MS, echo (quote the prompt)
//   reset[:times=K] close the connection without sending a byte (the first K times, else always)
//   reasoning-model OpenAI wire: HTTP 400 "unsupported_parameter" (param max_tokens) when the body
//                  carries max_tokens, as OpenAI's reasoning models answer; else the fixed answer
//
// Run as a process: `node --import tsx src/demo/synthetic-endpoint.ts [--port N] [--mode M] [--answer TEXT]`
// prints `SYNTHETIC_ENDPOINT_URL=<url>` on stdout once listening and serves until SIGTERM or SIGINT.
// Out-of-process users get `GET /_control/stats` and `POST /_control/release`.
//
// openConnections() counts sockets carrying an inference request that is not yet fully answered: a
// client that abandons a request must close its socket, which drops it from the count and marks the
// request closedEarly. Sockets without a request in progress (keep-alive connections between requests,
// and the spare connection Node's fetch opens right after an aborted request, nodejs/undici#5845) are
// reported apart by idleConnections(). keepAlive: false makes every answer say `Connection: close`.

import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const DEFAULT_ANSWER = 'Hello from the synthetic endpoint.';
export const SECRET_ANSWER = 'Here is the secret you asked for: the launch code is 0000.';
export const SYNTHETIC_TOOL_NAME = 'run_shell_command';
const DEFAULT_OVERSIZE_MIB = 5;
const MAX_OVERSIZE_MIB = 256;
const MAX_WAIT_MS = 600_000;
const REQUEST_BODY_MAX_BYTES = 8 * 1024 * 1024;
const DRIP_PIECE_BYTES = 7;
const OVERSIZE_CHUNK_BYTES = 64 * 1024;
const KNOWN_MODES = new Set([
  'fixed', 'echo', 'delay', 'hold', 'tool-call', 'oversize', 'http500', 'malformed', 'drip', 'secret',
  'finish', 'refusal', 'refusal-part', 'choice-error', 'error-in-200', 'http', 'reset', 'reasoning-model',
]);
/** In every answer that must never be released: partial, refused or filtered model text. */
export const PARTIAL_MODEL_TEXT = 'PARTIAL-MODEL-TEXT never to be released';
/** In every provider error message, with words a forbid-secret policy would catch. */
export const PROVIDER_ERROR_TEXT = 'PROVIDER-ERROR-TEXT: here is the secret you asked for';
const COMPLETE_FINISH_VALUES = new Set(['stop', 'end_turn', 'stop_sequence', 'none']);

export type WireFormat = 'openai' | 'anthropic';

export interface ReceivedRequest {
  id: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: unknown;
  /** The body exactly as received. */
  rawBody: string;
  format: WireFormat;
  /** The directive applied, e.g. "hold" or "delay:50". */
  mode: string;
  receivedAt: number;
  /** The client closed the connection before the whole answer was sent. */
  closedEarly: boolean;
  /** The whole answer was handed to the connection. */
  answered: boolean;
  /** Answer body bytes written so far. */
  bytesSent: number;
}

export interface SyntheticEndpoint {
  /** e.g. http://127.0.0.1:PORT/v1 (use as OPENAI_BASE_URL). */
  url: string;
  /** e.g. http://127.0.0.1:PORT (use as ANTHROPIC_BASE_URL). */
  origin: string;
  requests: ReceivedRequest[];
  /** Live sockets carrying an inference request whose answer has not been fully sent. */
  openConnections(): number;
  /** Live sockets with no request in progress (keep-alive between requests, spare connections). */
  idleConnections(): number;
  /** Lets every request currently holding answer; returns how many were released. */
  releaseAll(): number;
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Resolves once openConnections() is 0 (for checks that abandoned requests were really closed). */
  waitForIdle(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface SyntheticEndpointOptions {
  port?: number;
  host?: string;
  defaultMode?: string;
  answer?: string;
  /** Default true; false answers every request with `Connection: close`. */
  keepAlive?: boolean;
  beforeAnswer?: (req: ReceivedRequest) => Promise<void> | void;
}

interface Directive {
  mode: string;
  arg: string | undefined;
}

function parseDirective(text: string): Directive | undefined {
  const pattern = /\[\[([a-z0-9-]+)(?::([^\]]*))?\]\]/g;
  for (const match of text.matchAll(pattern)) {
    const mode = match[1] as string;
    if (KNOWN_MODES.has(mode)) return { mode, arg: match[2] };
  }
  return undefined;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join('');
  }
  return '';
}

function lastUserText(body: unknown): string {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i] as { role?: unknown; content?: unknown } | null;
    if (message !== null && typeof message === 'object' && message.role === 'user') return contentText(message.content);
  }
  return '';
}

function boundedMs(arg: string | undefined, fallback: number): number {
  const value = Number(arg);
  return arg !== undefined && Number.isFinite(value) && value >= 0 ? Math.min(value, MAX_WAIT_MS) : fallback;
}

function approximateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function requestModel(body: unknown): string {
  const model = (body as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? model : 'synthetic-model';
}

function completionBody(format: WireFormat, id: number, model: string, prompt: string, text: string, withToolCall: boolean): unknown {
  if (format === 'anthropic') {
    const content: unknown[] = [{ type: 'text', text }];
    if (withToolCall) {
      content.push({ type: 'tool_use', id: `toolu_synthetic_${id}`, name: SYNTHETIC_TOOL_NAME, input: { command: 'ls -la' } });
    }
    return {
      id: `msg_synthetic_${id}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: withToolCall ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: approximateTokens(prompt), output_tokens: approximateTokens(text) },
    };
  }
  const message: Record<string, unknown> = { role: 'assistant', content: withToolCall ? null : text };
  if (withToolCall) {
    message.tool_calls = [
      {
        id: `call_synthetic_${id}`,
        type: 'function',
        function: { name: SYNTHETIC_TOOL_NAME, arguments: JSON.stringify({ command: 'ls -la' }) },
      },
    ];
  }
  const completionTokens = approximateTokens(text);
  const promptTokens = approximateTokens(prompt);
  return {
    id: `chatcmpl-synthetic-${id}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: withToolCall ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

/** `code=503,times=2,echo` as a map; a bare word maps to "". */
function directiveOptions(arg: string | undefined): Map<string, string> {
  const options = new Map<string, string>();
  for (const part of (arg ?? '').split(',')) {
    const [key, value] = part.split('=', 2) as [string, string | undefined];
    if (key.trim() !== '') options.set(key.trim(), (value ?? '').trim());
  }
  return options;
}

function finishBody(format: WireFormat, id: number, model: string, arg: string | undefined, fixedAnswer: string): unknown {
  const [value, flag] = (arg ?? 'length').split(',') as [string, string | undefined];
  const complete = COMPLETE_FINISH_VALUES.has(value);
  const text = complete ? fixedAnswer : flag === 'empty' ? '' : PARTIAL_MODEL_TEXT;
  const body = completionBody(format, id, model, '', text, false) as Record<string, unknown>;
  const reason = value === 'none' ? null : value;
  if (format === 'anthropic') return { ...body, stop_reason: reason };
  const choice = (body.choices as Record<string, unknown>[])[0]!;
  if (reason === null) delete choice.finish_reason;
  else choice.finish_reason = reason;
  return body;
}

function refusalBody(format: WireFormat, id: number, model: string, asPart: boolean): unknown {
  const body = completionBody(format, id, model, '', PARTIAL_MODEL_TEXT, false) as Record<string, unknown>;
  if (format === 'anthropic') return { ...body, stop_reason: 'refusal' };
  const choice = (body.choices as Record<string, unknown>[])[0]!;
  choice.message = asPart
    ? { role: 'assistant', content: [{ type: 'refusal', refusal: PARTIAL_MODEL_TEXT }], refusal: null }
    : { role: 'assistant', content: null, refusal: PARTIAL_MODEL_TEXT };
  return body;
}

/** The wire format's error object: OpenAI {error: {message, type, code}}, Anthropic {type: "error", error, request_id}. */
function errorBody(format: WireFormat, status: number, message: string, id: number): unknown {
  if (format === 'anthropic') {
    const type =
      status === 429 ? 'rate_limit_error'
      : status === 529 ? 'overloaded_error'
      : status === 404 ? 'not_found_error'
      : status === 401 ? 'authentication_error'
      : status >= 500 ? 'api_error'
      : 'invalid_request_error';
    return { type: 'error', error: { type, message }, request_id: `req_synthetic_${id}` };
  }
  const code = status === 404 ? 'model_not_found' : status === 429 ? 'rate_limit_exceeded' : null;
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}

function sleep(ms: number, cancelled: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void cancelled.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export async function startSyntheticEndpoint(options: SyntheticEndpointOptions = {}): Promise<SyntheticEndpoint> {
  const defaultDirective = parseDirective(`[[${options.defaultMode ?? 'fixed'}]]`);
  if (defaultDirective === undefined) {
    throw new Error(`unknown synthetic endpoint mode "${options.defaultMode}" (allowed: ${[...KNOWN_MODES].join(', ')})`);
  }
  const fixedAnswer = options.answer ?? DEFAULT_ANSWER;
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  // Sockets whose current inference request is not fully answered yet.
  const requestSockets = new Set<Socket>();
  const holders = new Set<() => void>();
  // Failures served so far per directive and prompt, for `times=K`.
  const failuresServed = new Map<string, number>();
  const failThisTime = (key: string, times: string | undefined): boolean => {
    if (times === undefined) return true;
    const served = failuresServed.get(key) ?? 0;
    if (served >= Number(times)) return false;
    failuresServed.set(key, served + 1);
    return true;
  };
  const arrivalWaiters = new Set<() => void>();
  const idleWaiters = new Set<() => void>();

  const notifyIdle = (): void => {
    if (requestSockets.size !== 0) return;
    for (const waiter of [...idleWaiters]) waiter();
  };

  const releaseAll = (): number => {
    const released = holders.size;
    for (const release of [...holders]) release();
    return released;
  };

  async function answer(
    record: ReceivedRequest,
    directive: Directive,
    res: ServerResponse,
    closed: Promise<void>,
    isClosed: () => boolean,
  ): Promise<void> {
    const prompt = lastUserText(record.body);
    const model = requestModel(record.body);
    const { mode, arg } = directive;

    if (mode === 'delay') await sleep(boundedMs(arg, 0), closed);
    if (mode === 'hold') {
      await new Promise<void>((resolve) => {
        const release = (): void => {
          holders.delete(release);
          resolve();
        };
        holders.add(release);
        void closed.then(release);
        if (arg !== undefined) setTimeout(release, boundedMs(arg, MAX_WAIT_MS)).unref();
      });
    }
    if (isClosed()) return;
    if (options.beforeAnswer !== undefined) await options.beforeAnswer(record);
    if (isClosed()) return;

    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (options.keepAlive === false) headers.Connection = 'close';
    const send = (status: number, text: string, extra: Record<string, string> = {}): void => {
      const bytes = Buffer.from(text, 'utf8');
      res.writeHead(status, { ...headers, ...extra, 'Content-Length': String(bytes.byteLength) });
      record.bytesSent += bytes.byteLength;
      res.end(bytes);
    };

    const requestIdHeader = record.format === 'anthropic' ? 'request-id' : 'x-request-id';
    switch (mode) {
      case 'finish':
        send(200, JSON.stringify(finishBody(record.format, record.id, model, arg, fixedAnswer)));
        return;
      case 'refusal':
      case 'refusal-part':
        send(200, JSON.stringify(refusalBody(record.format, record.id, model, mode === 'refusal-part')));
        return;
      case 'choice-error':
      case 'error-in-200': {
        if (record.format === 'anthropic') {
          send(200, JSON.stringify(errorBody('anthropic', mode === 'choice-error' ? 500 : 529, PROVIDER_ERROR_TEXT, record.id)));
          return;
        }
        const error = { code: 502, message: PROVIDER_ERROR_TEXT, metadata: { provider_name: 'synthetic' } };
        const body = mode === 'error-in-200'
          ? { error }
          : { ...(completionBody('openai', record.id, model, prompt, '', false) as object), choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'error', error }] };
        send(200, JSON.stringify(body), { [requestIdHeader]: `gen-synthetic-${record.id}` });
        return;
      }
      case 'http': {
        const options = directiveOptions(arg);
        if (!failThisTime(`${mode}:${arg ?? ''}:${prompt}`, options.get('times'))) break;
        const status = Number(options.get('code') ?? '500');
        const extra: Record<string, string> = { [requestIdHeader]: `req_synthetic_${record.id}` };
        if (options.has('retry_after')) extra['Retry-After'] = options.get('retry_after')!;
        if (options.has('retry_after_ms')) extra['retry-after-ms'] = options.get('retry_after_ms')!;
        const message = options.has('echo') ? `${PROVIDER_ERROR_TEXT}; you sent: ${prompt}` : PROVIDER_ERROR_TEXT;
        send(Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500, JSON.stringify(errorBody(record.format, status, message, record.id)), extra);
        return;
      }
      case 'reasoning-model': {
        const body = record.body as Record<string, unknown>;
        if (record.format === 'anthropic' || !('max_tokens' in body)) break;
        const error = {
          message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'unsupported_parameter',
        };
        send(400, JSON.stringify({ error }), { [requestIdHeader]: `req_synthetic_${record.id}` });
        return;
      }
      case 'reset':
        if (!failThisTime(`${mode}:${arg ?? ''}:${prompt}`, directiveOptions(arg).get('times'))) break;
        // No byte of an answer: the client sees the connection reset.
        res.socket?.destroy();
        return;
      case 'http500':
        send(500, JSON.stringify({ error: { message: 'synthetic internal server error', type: 'server_error', code: null } }));
        return;
      case 'malformed':
        send(200, '{"id": "chatcmpl-synthetic", "object": "chat.completion", "choices": [{"message": {"role": "assistant", "content": "cut');
        return;
      case 'tool-call':
        send(200, JSON.stringify(completionBody(record.format, record.id, model, prompt, 'I will run a command for you.', true)));
        return;
      case 'oversize': {
        const mib = Math.min(Math.max(Number(arg ?? DEFAULT_OVERSIZE_MIB) || DEFAULT_OVERSIZE_MIB, 1), MAX_OVERSIZE_MIB);
        await sendOversize(record, res, headers, model, prompt, mib * 1024 * 1024, isClosed);
        return;
      }
      case 'drip': {
        const text = JSON.stringify(completionBody(record.format, record.id, model, prompt, fixedAnswer, false));
        await sendDrip(record, res, headers, text, boundedMs(arg, 10), closed, isClosed);
        return;
      }
      default: {
        const text =
          mode === 'echo' ? prompt
          : mode === 'secret' ? SECRET_ANSWER
          : mode === 'fixed' && arg !== undefined ? arg
          : fixedAnswer;
        send(200, JSON.stringify(completionBody(record.format, record.id, model, prompt, text, false)));
        return;
      }
    }
    // A failing mode whose failures are used up answers normally.
    send(200, JSON.stringify(completionBody(record.format, record.id, model, prompt, fixedAnswer, false)));
  }

  async function sendOversize(
    record: ReceivedRequest,
    res: ServerResponse,
    headers: Record<string, string>,
    model: string,
    prompt: string,
    size: number,
    isClosed: () => boolean,
  ): Promise<void> {
    // A valid completion whose text fills the body; no Content-Length, so only a running cap can stop it.
    const template = JSON.stringify(completionBody(record.format, record.id, model, prompt, '\u0000FILL\u0000', false));
    const [head, tail] = template.split('\\u0000FILL\\u0000') as [string, string];
    res.writeHead(200, headers);
    const write = async (chunk: string): Promise<boolean> => {
      if (isClosed()) return false;
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
      return !isClosed();
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

  async function sendDrip(
    record: ReceivedRequest,
    res: ServerResponse,
    headers: Record<string, string>,
    text: string,
    pauseMs: number,
    closed: Promise<void>,
    isClosed: () => boolean,
  ): Promise<void> {
    const bytes = Buffer.from(text, 'utf8');
    res.writeHead(200, { ...headers, 'Content-Length': String(bytes.byteLength) });
    for (let offset = 0; offset < bytes.byteLength; offset += DRIP_PIECE_BYTES) {
      if (isClosed()) return;
      const piece = bytes.subarray(offset, offset + DRIP_PIECE_BYTES);
      record.bytesSent += piece.byteLength;
      res.write(piece);
      if (offset + DRIP_PIECE_BYTES < bytes.byteLength) await sleep(pauseMs, closed);
    }
    if (!isClosed()) res.end();
  }

  function control(req: IncomingMessage, res: ServerResponse, path: string): void {
    const reply = (status: number, value: unknown): void => {
      res.writeHead(status, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify(value));
    };
    req.resume();
    if (req.method === 'GET' && path === '/_control/stats') {
      // The socket asking is not one of the provider connections being counted.
      const own = sockets.has(req.socket) && !requestSockets.has(req.socket) ? 1 : 0;
      reply(200, {
        requests: requests.length,
        open_connections: requestSockets.size,
        idle_connections: sockets.size - requestSockets.size - own,
        closed_early: requests.filter((r) => r.closedEarly).length,
        answered: requests.filter((r) => r.answered).length,
        holding: holders.size,
      });
    } else if (req.method === 'POST' && path === '/_control/release') {
      reply(200, { released: releaseAll() });
    } else {
      reply(404, { error: { message: `unknown control path ${path} (allowed: GET /_control/stats, POST /_control/release)` } });
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] as string;
    if (path.startsWith('/_control/')) {
      control(req, res, path);
      return;
    }
    const format: WireFormat | undefined =
      req.method !== 'POST' ? undefined
      : path.endsWith('/chat/completions') ? 'openai'
      : path.endsWith('/messages') ? 'anthropic'
      : undefined;
    if (format === undefined) {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify({ error: { message: `no such endpoint: ${req.method} ${path} (allowed: POST .../chat/completions, POST .../messages)` } }));
      return;
    }

    requestSockets.add(req.socket);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > REQUEST_BODY_MAX_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      if (tooLarge) {
        res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' });
        res.end(JSON.stringify({ error: { message: `request body over ${REQUEST_BODY_MAX_BYTES} bytes` } }));
        return;
      }
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const directive = parseDirective(lastUserText(body)) ?? defaultDirective!;
      const record: ReceivedRequest = {
        id: requests.length + 1,
        path,
        headers: req.headers,
        body,
        rawBody,
        format,
        mode: directive.arg === undefined ? directive.mode : `${directive.mode}:${directive.arg}`,
        receivedAt: Date.now(),
        closedEarly: false,
        answered: false,
        bytesSent: 0,
      };
      requests.push(record);
      for (const waiter of [...arrivalWaiters]) waiter();

      let isClosed = false;
      let markClosed: () => void = () => undefined;
      const closed = new Promise<void>((resolve) => {
        markClosed = resolve;
      });
      res.on('finish', () => {
        record.answered = true;
        requestSockets.delete(req.socket);
        notifyIdle();
      });
      res.on('close', () => {
        isClosed = true;
        if (!record.answered) {
          record.closedEarly = true;
          // The client hung up (Node keeps the half-open socket otherwise); nothing more will be sent.
          req.socket.destroy();
        }
        markClosed();
      });

      if (body === undefined) {
        res.writeHead(400, { 'Content-Type': 'application/json', Connection: 'close' });
        res.end(JSON.stringify({ error: { message: 'the request body is not JSON' } }));
        return;
      }
      answer(record, directive, res, closed, () => isClosed).catch((error: unknown) => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        res.writeHead(500, { 'Content-Type': 'application/json', Connection: 'close' });
        res.end(JSON.stringify({ error: { message: `synthetic endpoint hook failed: ${(error as Error).message}` } }));
      });
    });
  }

  const server = createServer(handle);
  // Held requests may wait far longer than Node's default request timeout.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      requestSockets.delete(socket);
      notifyIdle();
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;

  const waitUntil = (ready: () => boolean, waiters: Set<() => void>, timeoutMs: number, what: () => string): Promise<void> =>
    new Promise((resolve, reject) => {
      if (ready()) {
        resolve();
        return;
      }
      const check = (): void => {
        if (!ready()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(what()));
      }, timeoutMs);
      waiters.add(check);
    });

  return {
    url: `${origin}/v1`,
    origin,
    requests,
    openConnections: () => requestSockets.size,
    idleConnections: () => sockets.size - requestSockets.size,
    releaseAll,
    waitForRequests: (n, timeoutMs = 10_000) =>
      waitUntil(() => requests.length >= n, arrivalWaiters, timeoutMs, () => `synthetic endpoint saw ${requests.length} of ${n} requests within ${timeoutMs} ms`),
    waitForIdle: (timeoutMs = 10_000) =>
      waitUntil(
        () => requestSockets.size === 0,
        idleWaiters,
        timeoutMs,
        () => `synthetic endpoint still has ${requestSockets.size} open request connections after ${timeoutMs} ms`,
      ),
    close: () =>
      new Promise<void>((resolve) => {
        releaseAll();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
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

// A local inference endpoint: the model `symbi demo` talks to, and the base the tests, benchmarks and
// stress runs build on (test/support/synthetic-endpoint.ts adds the failure and provider-case modes, so
// they never ship in this module). It speaks every wire format the server does: a POST path ending in
// a wire format's `fake.pathSuffix` (/chat/completions, /messages, :generateContent) is answered in
// it, and the declaration (src/shared/provider/wire-*.ts) reads the request back: its last user
// message, its model and its key.
//
// The behaviour is picked per request by a directive anywhere in the LAST user message, `[[mode]]` or
// `[[mode:arg]]`, else by the default mode. The modes here:
//   fixed[:text]   answer a fixed text (default "Hello from the synthetic endpoint.")
//   echo           answer the last user message
//   delay:MS       wait MS milliseconds, then answer the fixed text
//   hold[:MS]      wait until releaseAll() (or POST /_control/release), the client disconnects, or MS pass
//   secret         an answer containing the word "secret"
// More modes come in through the `modes` option: each is a handler given the request and a way to answer.
//
// Out-of-process users get `GET /_control/stats` and `POST /_control/release`.
//
// openConnections() counts sockets carrying an inference request that is not yet fully answered: a
// client that abandons a request must close its socket, which drops it from the count and marks the
// request closedEarly. Sockets without a request in progress (keep-alive connections between requests,
// and the spare connection Node's fetch opens right after an aborted request, nodejs/undici#5845) are
// reported apart by idleConnections(). keepAlive: false makes every answer say `Connection: close`.

import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WIRE_FORMAT_NAMES, WIRE_FORMATS, type WireFormat } from '../shared/provider/provider-kinds.js';

export const DEFAULT_ANSWER = 'Hello from the synthetic endpoint.';
export const SECRET_ANSWER = 'Here is the secret you asked for: the launch code is 0000.';
export const SYNTHETIC_TOOL_NAME = 'run_shell_command';
const MAX_WAIT_MS = 600_000;
const REQUEST_BODY_MAX_BYTES = 8 * 1024 * 1024;
/** The modes this module answers itself; `delay` and `hold` wait first, then answer the fixed text. */
const OWN_MODES = ['fixed', 'echo', 'delay', 'hold', 'secret'];

export interface ReceivedRequest {
  id: number;
  path: string;
  /** The request target as sent, query included. */
  target: string;
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
  /** Further modes by name, each answering in its own way (test/support/synthetic-endpoint.ts). */
  modes?: Readonly<Record<string, ModeHandler>>;
}

/** What a mode handler gets for one request. */
export interface ModeContext {
  record: ReceivedRequest;
  mode: string;
  arg: string | undefined;
  prompt: string;
  model: string;
  /** The key the request carried, as its wire format sends it ("" without one). */
  key: string;
  fixedAnswer: string;
  res: ServerResponse;
  /** The answer headers every mode sends (content type, and Connection: close when keepAlive is false). */
  headers: Record<string, string>;
  /** Writes a whole answer with its Content-Length. */
  send(status: number, text: string, extra?: Record<string, string>): void;
  /** Resolves when the client has closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
  /** For `times=K`: true for the first K requests with this key, then false. */
  failThisTime(key: string, times: string | undefined): boolean;
}

/** Answers one request, or returns 'normal' to have it answered with the fixed text. */
export type ModeHandler = (context: ModeContext) => Promise<'answered' | 'normal'> | 'answered' | 'normal';

interface Directive {
  mode: string;
  arg: string | undefined;
}

function parseDirective(text: string, known: ReadonlySet<string>): Directive | undefined {
  const pattern = /\[\[([a-z0-9-]+)(?::([^\]]*))?\]\]/g;
  for (const match of text.matchAll(pattern)) {
    const mode = match[1] as string;
    if (known.has(mode)) return { mode, arg: match[2] };
  }
  return undefined;
}

/** A directive's millisecond argument, capped; the fallback when it is missing or not a number. */
export function boundedMs(arg: string | undefined, fallback: number): number {
  const value = Number(arg);
  return arg !== undefined && Number.isFinite(value) && value >= 0 ? Math.min(value, MAX_WAIT_MS) : fallback;
}

function approximateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The text of the last user message of a request in the wire format (where a directive is looked for). */
export function lastUserText(format: WireFormat, body: unknown): string {
  return WIRE_FORMATS[format].fake.prompt(body);
}

/** How the endpoint answers in one wire format (the paths it takes and how it reads a request are its declaration's). */
interface WireSimulation {
  /** A complete answer with the given text (or a proposed tool call). */
  completion(id: number, model: string, prompt: string, text: string, withToolCall: boolean): unknown;
}

// One simulation per wire format: a wire format the endpoint cannot speak does not compile.
const WIRE_SIMULATIONS = {
  'openai-chat': {
    completion: (id, model, prompt, text, withToolCall) => {
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
    },
  },
  'anthropic-messages': {
    completion: (id, model, prompt, text, withToolCall) => {
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
    },
  },
  'gemini-generate-content': {
    completion: (id, model, prompt, text, withToolCall) => {
      const parts: unknown[] = [{ text }];
      if (withToolCall) parts.push({ functionCall: { id: `call_synthetic_${id}`, name: SYNTHETIC_TOOL_NAME, args: { command: 'ls -la' } } });
      const promptTokens = approximateTokens(prompt);
      const answerTokens = approximateTokens(text);
      return {
        candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: promptTokens, candidatesTokenCount: answerTokens, totalTokenCount: promptTokens + answerTokens },
        modelVersion: model,
        responseId: `synthetic-${id}`,
      };
    },
  },
} satisfies Record<WireFormat, WireSimulation>;

/** A complete answer in the wire format, with the given text (or a proposed tool call). */
export function completionBody(format: WireFormat, id: number, model: string, prompt: string, text: string, withToolCall: boolean): unknown {
  return WIRE_SIMULATIONS[format].completion(id, model, prompt, text, withToolCall);
}

/** Waits ms milliseconds, or less when `cancelled` resolves first. */
export function sleep(ms: number, cancelled: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void cancelled.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export async function startSyntheticEndpoint(options: SyntheticEndpointOptions = {}): Promise<SyntheticEndpoint> {
  const extraModes = options.modes ?? {};
  const knownModes = new Set([...OWN_MODES, ...Object.keys(extraModes)]);
  const defaultDirective = parseDirective(`[[${options.defaultMode ?? 'fixed'}]]`, knownModes);
  if (defaultDirective === undefined) {
    throw new Error(`unknown synthetic endpoint mode "${options.defaultMode}" (allowed: ${[...knownModes].join(', ')})`);
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

  async function answer(record: ReceivedRequest, directive: Directive, res: ServerResponse, closed: Promise<void>, isClosed: () => boolean): Promise<void> {
    const reader = WIRE_FORMATS[record.format].fake;
    const prompt = reader.prompt(record.body);
    const model = reader.model(record.body, record.path) ?? 'synthetic-model';
    const key = reader.key(record.headers);
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

    const handler = Object.hasOwn(extraModes, mode) ? extraModes[mode] : undefined;
    if (handler !== undefined) {
      const context: ModeContext = { record, mode, arg, prompt, model, key, fixedAnswer, res, headers, send, closed, isClosed, failThisTime };
      if ((await handler(context)) === 'answered') return;
      send(200, JSON.stringify(completionBody(record.format, record.id, model, prompt, fixedAnswer, false)));
      return;
    }
    const text = mode === 'echo' ? prompt : mode === 'secret' ? SECRET_ANSWER : mode === 'fixed' && arg !== undefined ? arg : fixedAnswer;
    send(200, JSON.stringify(completionBody(record.format, record.id, model, prompt, text, false)));
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
    const format = req.method === 'POST' ? WIRE_FORMAT_NAMES.find((wire) => path.endsWith(WIRE_FORMATS[wire].fake.pathSuffix)) : undefined;
    if (format === undefined) {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'application/json', Connection: 'close' });
      const allowed = WIRE_FORMAT_NAMES.map((wire) => `POST ...${WIRE_FORMATS[wire].fake.pathSuffix}`).join(', ');
      res.end(JSON.stringify({ error: { message: `no such endpoint: ${req.method} ${path} (allowed: ${allowed})` } }));
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
      const directive = parseDirective(lastUserText(format, body), knownModes) ?? defaultDirective!;
      const record: ReceivedRequest = {
        id: requests.length + 1,
        path,
        target: req.url ?? '/',
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
      waitUntil(
        () => requests.length >= n,
        arrivalWaiters,
        timeoutMs,
        () => `synthetic endpoint saw ${requests.length} of ${n} requests within ${timeoutMs} ms`,
      ),
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

import { createHash } from 'node:crypto';
import type { Agent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { http, https } from '../../shared/node-http.js';
import { isIP } from 'node:net';
import tls, { type PeerCertificate } from 'node:tls';
import { shortIdentifier } from '../../shared/provider/finish-vocabulary.js';
import { TYPED_RESPONSE_MAX_BYTES } from '../../shared/limits.js';
import { packageVersion } from '../../shared/package-version.js';
import type { ProxySetting } from '../../shared/provider/provider-config.js';
import { REQUEST_ID_HEADERS } from '../../shared/provider/provider-kinds.js';
import type { ErrorFields } from '../../shared/provider/wire-format.js';
import { redactKeys } from '../../shared/secrets/key-redaction.js';
import { readCappedBody } from './capped-body.js';
import { ProviderError, type ProviderErrorDetails } from './provider-error.js';
import { formatWait } from './retry-policy.js';

// One POST of a JSON body to a provider and the parsed JSON answer: no redirects, a running byte cap
// on the body, and errors in our own words. Retries are the caller's: each attempt follows its own
// durable DirectInferenceRequested record.

export const USER_AGENT = `symbi-mcp/${packageVersion}`;

// The provider's own message goes to standard error only, and only this much of it.
const PROVIDER_MESSAGE_MAX_CHARS = 200;
// Enough of an error body to hash it and find its identifiers; the rest is never read.
const ERROR_BODY_READ_BYTES = 64 * 1024;
// A Retry-After beyond a day is not a wait anyone means; it is kept as "a day".
const RETRY_AFTER_MAX_MS = 86_400_000;

export interface JsonPost {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** The API key, scrubbed from every message this call produces. */
  secret: string;
  proxy: ProxySetting | null;
  /** The identifiers and message of the wire format's error body. */
  errorFields: (body: unknown) => ErrorFields;
  /** Our fixed words for an HTTP failure, by its status and the identifiers its body gave. */
  explainFailure: (status: number, fields: ErrorFields) => string;
}

export interface JsonAnswer {
  json: unknown;
  /** The provider's request id, when it sent one that is a short identifier. */
  requestId: string | null;
}

/** Printable single-line excerpt of untrusted text for standard error, capped, with key-like strings removed. */
export function safeExcerpt(text: string, secret: string, max = PROVIDER_MESSAGE_MAX_CHARS): string {
  const cleaned = redactKeys(text, [secret])
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return cleaned.length > max ? `${cleaned.slice(0, max)}...` : cleaned;
}

function abortedError(signal: AbortSignal, secret: string): ProviderError {
  const reason: unknown = signal.reason;
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : '';
  const suffix = detail === '' || detail === 'This operation was aborted' ? '' : `: ${safeExcerpt(detail, secret)}`;
  return new ProviderError(`the provider request was aborted${suffix}`, 'aborted');
}

function describeNetworkFailure(error: unknown): string {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const source = cause instanceof Error ? cause : error instanceof Error ? error : undefined;
  if (source === undefined) return 'unknown error';
  const code = (source as { code?: unknown }).code;
  // Node's message lists the certificate's names, which whoever serves the certificate chose.
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${code}: the certificate does not name the host in the URL`;
  return typeof code === 'string' && !source.message.includes(code) ? `${code} ${source.message}` : source.message;
}

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** retry-after-ms (OpenAI) or Retry-After in seconds or as an HTTP date, in milliseconds. */
export function retryAfterMs(headers: IncomingHttpHeaders, now = Date.now()): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.min(RETRY_AFTER_MAX_MS, Math.ceil(Number(ms)));
  const after = headerValue(headers, 'retry-after')?.trim();
  if (after === undefined || after === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Math.min(RETRY_AFTER_MAX_MS, Math.ceil(Number(after) * 1000));
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.min(RETRY_AFTER_MAX_MS, Math.max(0, date - now));
}

/** The request id a provider sends, in the first of the headers the providers declare (provider-kinds.ts) that holds one. */
export function requestIdOf(headers: IncomingHttpHeaders): string | null {
  for (const name of REQUEST_ID_HEADERS) {
    const id = shortIdentifier(headerValue(headers, name));
    if (id !== null) return id;
  }
  return null;
}

/** Reads at most ERROR_BODY_READ_BYTES of an error body; a failed read leaves it short. */
function readErrorBody(response: IncomingMessage): Promise<Buffer> {
  return new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (): void => {
      response.off('data', onData);
      resolve(Buffer.concat(chunks).subarray(0, ERROR_BODY_READ_BYTES));
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      total += chunk.byteLength;
      if (total >= ERROR_BODY_READ_BYTES) finish();
    };
    response.on('data', onData);
    response.once('end', finish);
    response.once('close', finish);
    response.on('error', finish);
  });
}

function httpFailure(status: number, bytes: Buffer, headers: IncomingHttpHeaders, shownTarget: string, post: JsonPost): ProviderError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const fields = post.errorFields(parsed);
  const details: ProviderErrorDetails = {
    status,
    body: { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.byteLength },
  };
  if (fields.errorType !== undefined) details.errorType = fields.errorType;
  if (fields.param !== undefined) details.errorParam = fields.param;
  const requestId = requestIdOf(headers) ?? fields.requestId;
  if (requestId !== undefined) details.requestId = requestId;
  // The Retry-After header, else a wait the body asks for (Google's RetryInfo).
  const wait = retryAfterMs(headers) ?? (fields.retryAfterMs === undefined ? undefined : Math.min(RETRY_AFTER_MAX_MS, fields.retryAfterMs));
  if (wait !== undefined) details.retryAfterMs = wait;
  const providerText = fields.message ?? (parsed === undefined ? bytes.toString('utf8') : '');
  if (providerText !== '') details.providerMessage = safeExcerpt(providerText, post.secret);
  return new ProviderError(
    `HTTP ${status} from POST ${shownTarget}: ${post.explainFailure(status, fields)}${identifierSuffix(details)}`,
    'http',
    status,
    details,
  );
}

/**
 * " (the provider's identifiers are in the journal, Retry-After z)" for the caller: the error type and
 * request id are provider-chosen text, so they go to the journal and standard error, never the caller.
 */
export function identifierSuffix(details: ProviderErrorDetails): string {
  const parts: string[] = [];
  if (details.errorType !== undefined || details.requestId !== undefined) parts.push("the provider's identifiers are in the journal");
  if (details.retryAfterMs !== undefined) parts.push(`Retry-After ${formatWait(details.retryAfterMs)}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

// One keep-alive pool per protocol (and proxy) and worker thread: a run reuses an idle connection
// instead of paying a handshake. A cancelled request destroys its own socket, so an aborted
// connection is never handed to another run. Through a proxy, https targets are tunnelled with
// CONNECT (https-proxy-agent) and http targets sent to the proxy as absolute URLs (http-proxy-agent).
// The proxy libraries load only when a proxy is configured: importing them slows every worker
// thread's start, for nothing when requests go direct.
const directAgents = {
  http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
};
const proxyAgents = new Map<string, Agent>();

function directAgent(target: URL): Agent {
  return target.protocol === 'https:' ? directAgents.https : directAgents.http;
}

async function proxyAgent(target: URL, proxy: ProxySetting): Promise<Agent> {
  const key = `${target.protocol} ${proxy.url}`;
  let agent = proxyAgents.get(key);
  if (agent === undefined) {
    const options = { keepAlive: true, scheduling: 'lifo' } as const;
    agent =
      target.protocol === 'https:'
        ? new (await import('https-proxy-agent')).HttpsProxyAgent(proxy.url, options)
        : new (await import('http-proxy-agent')).HttpProxyAgent(proxy.url, options);
    proxyAgents.set(key, agent);
  }
  return agent;
}

/**
 * Through a CONNECT tunnel, https-proxy-agent sends no server name for an IP-address target (SNI
 * cannot carry one), and Node then checks the certificate against "localhost". The check is pointed
 * back at the address actually asked for; host names need nothing.
 */
function tunnelledIdentityCheck(target: URL): { checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined } {
  const address = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(address) === 0) return {};
  return { checkServerIdentity: (_host, cert) => tls.checkServerIdentity(address, cert) };
}

interface SentRequest {
  response: IncomingMessage;
  /** Closes the connection (the request and its socket), whatever state it is in. */
  close: () => void;
}

function sendRequest(target: URL, post: JsonPost, agent: Agent, body: Buffer, signal: AbortSignal): Promise<SentRequest> {
  return new Promise<SentRequest>((resolve, reject) => {
    // An abort while the proxy agent loaded would never reach the listener below.
    if (signal.aborted) {
      reject(new Error('aborted'));
      return;
    }
    const secure = target.protocol === 'https:';
    const request = (secure ? https : http).request(target, {
      method: 'POST',
      agent,
      headers: { ...post.headers, 'User-Agent': USER_AGENT, 'content-length': String(body.byteLength) },
      ...(secure && post.proxy !== null ? tunnelledIdentityCheck(target) : {}),
    });
    const close = (): void => {
      request.destroy();
    };
    const onAbort = (): void => {
      close();
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    request.once('response', (response) => {
      signal.removeEventListener('abort', onAbort);
      // After the headers, the caller's abort still has to close the connection mid-body.
      signal.addEventListener('abort', close, { once: true });
      response.once('close', () => signal.removeEventListener('abort', close));
      resolve({ response, close });
    });
    // `on`, not `once`: a socket can report more than one error, and an unheard one would crash the thread.
    request.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    request.end(body);
  });
}

/** POSTs `post.body` as JSON and returns the parsed JSON answer, or throws a ProviderError. */
export async function postJson(post: JsonPost, signal: AbortSignal): Promise<JsonAnswer> {
  if (signal.aborted) throw abortedError(signal, post.secret);
  const target = new URL(post.url);
  const shownTarget = `${target.origin}${target.pathname}`;
  const via = post.proxy === null ? '' : ` through the proxy in ${post.proxy.variable}`;
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new ProviderError(`the provider URL ${shownTarget} is not http or https`, 'network');
  }

  let sent: SentRequest;
  try {
    const agent = post.proxy === null ? directAgent(target) : await proxyAgent(target, post.proxy);
    sent = await sendRequest(target, post, agent, Buffer.from(JSON.stringify(post.body), 'utf8'), signal);
  } catch (error) {
    if (signal.aborted) throw abortedError(signal, post.secret);
    // No response byte arrived: a reset here means the request never reached the model.
    const details: ProviderErrorDetails = errorCode(error) === 'ECONNRESET' ? { resetBeforeResponse: true } : {};
    throw new ProviderError(
      `could not reach the provider at POST ${shownTarget}${via}: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
      undefined,
      details,
    );
  }
  const { response, close } = sent;

  try {
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const bytes = await readErrorBody(response);
      close();
      if (signal.aborted) throw abortedError(signal, post.secret);
      throw httpFailure(status, bytes, response.headers, shownTarget, post);
    }

    const bytes = await readCappedBody(response, TYPED_RESPONSE_MAX_BYTES, close);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new ProviderError(`the answer from POST ${shownTarget} is not valid UTF-8`, 'malformed');
    }
    try {
      return { json: JSON.parse(text) as unknown, requestId: requestIdOf(response.headers) };
    } catch {
      // The parser's message quotes the body, which may be unreleased model text: say only what failed.
      throw new ProviderError(`the answer from POST ${shownTarget} is not valid JSON (${bytes.byteLength} bytes)`, 'malformed');
    }
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    if (signal.aborted) throw abortedError(signal, post.secret);
    close();
    throw new ProviderError(
      `the connection to the provider at POST ${shownTarget} failed while reading the answer: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
    );
  }
}

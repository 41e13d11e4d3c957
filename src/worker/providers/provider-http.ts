import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { TYPED_RESPONSE_MAX_BYTES } from '../../shared/limits.js';
import { readCappedBody } from './capped-body.js';
import { ProviderError } from './provider-error.js';

// One POST of a JSON body to a provider and the parsed JSON answer: no retries (each request follows
// its own durable DirectInferenceRequested record), no redirects, a running byte cap on the body.

const ERROR_EXCERPT_CHARS = 200;
// Enough of an error body to find the provider's own error message; the rest is never read.
const ERROR_BODY_READ_BYTES = 4096;

export interface JsonPost {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** The API key, scrubbed from every message this call produces. */
  secret: string;
}

/** Printable single-line excerpt of untrusted text, at most `max` characters, with the secret removed. */
export function safeExcerpt(text: string, secret: string, max = ERROR_EXCERPT_CHARS): string {
  let cleaned = secret === '' ? text : text.split(secret).join('[redacted]');
  cleaned = cleaned.replace(/[^\x20-\x7e]+/g, ' ').replace(/\s+/g, ' ').trim();
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
  return typeof code === 'string' && !source.message.includes(code) ? `${code} ${source.message}` : source.message;
}

function errorExcerpt(bytes: Uint8Array, secret: string): string {
  const text = new TextDecoder('utf-8').decode(bytes);
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message =
      typeof parsed.error === 'string' ? parsed.error
      : typeof parsed.error?.message === 'string' ? parsed.error.message
      : typeof parsed.message === 'string' ? parsed.message
      : undefined;
    if (message !== undefined) return safeExcerpt(message, secret);
  } catch {
    // Not JSON (or cut short): fall back to the raw text.
  }
  return safeExcerpt(text, secret);
}

/** Reads at most ERROR_BODY_READ_BYTES of an error body; the excerpt is a courtesy, so a failed read leaves it short. */
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

// One keep-alive pool per protocol and worker thread: a run reuses an idle
// connection instead of paying a handshake. A cancelled request destroys its
// own socket, so an aborted connection is never handed to another run.
const agents = {
  http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
};

interface SentRequest {
  response: IncomingMessage;
  /** Closes the connection (the request and its socket), whatever state it is in. */
  close: () => void;
}

function sendRequest(target: URL, headers: Record<string, string>, body: Buffer, signal: AbortSignal): Promise<SentRequest> {
  return new Promise<SentRequest>((resolve, reject) => {
    const secure = target.protocol === 'https:';
    const request = (secure ? https : http).request(target, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, 'content-length': String(body.byteLength) },
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
export async function postJson(post: JsonPost, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) throw abortedError(signal, post.secret);
  const target = new URL(post.url);
  const shownTarget = `${target.origin}${target.pathname}`;
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new ProviderError(`the provider URL ${shownTarget} is not http or https`, 'network');
  }

  let sent: SentRequest;
  try {
    sent = await sendRequest(target, post.headers, Buffer.from(JSON.stringify(post.body), 'utf8'), signal);
  } catch (error) {
    if (signal.aborted) throw abortedError(signal, post.secret);
    throw new ProviderError(
      `could not reach the provider at ${shownTarget}: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
    );
  }
  const { response, close } = sent;

  try {
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const excerpt = errorExcerpt(await readErrorBody(response), post.secret);
      close();
      if (signal.aborted) throw abortedError(signal, post.secret);
      const statusText = safeExcerpt(response.statusMessage ?? '', post.secret, 60);
      throw new ProviderError(
        `the provider answered HTTP ${status}${statusText === '' ? '' : ` ${statusText}`}${excerpt === '' ? '' : `: ${excerpt}`}`,
        'http',
        status,
      );
    }

    const bytes = await readCappedBody(response, TYPED_RESPONSE_MAX_BYTES, close);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new ProviderError('the provider response is not valid UTF-8', 'malformed');
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // The parser's message quotes the body, which may be unreleased model text: say only what failed.
      throw new ProviderError(`the provider response is not valid JSON (${bytes.byteLength} bytes)`, 'malformed');
    }
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    if (signal.aborted) throw abortedError(signal, post.secret);
    close();
    throw new ProviderError(
      `the connection to the provider at ${shownTarget} failed while reading the response: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
    );
  }
}

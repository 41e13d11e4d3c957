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

async function readErrorBody(response: Response): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < ERROR_BODY_READ_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
    }
  } catch {
    // The excerpt is a courtesy; a failed read leaves it empty.
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, ERROR_BODY_READ_BYTES);
}

/** POSTs `post.body` as JSON and returns the parsed JSON answer, or throws a ProviderError. */
export async function postJson(post: JsonPost, signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) throw abortedError(signal, post.secret);
  // A second controller lets this function close the connection itself (oversize, error body).
  const local = new AbortController();
  const combined = AbortSignal.any([signal, local.signal]);
  const target = new URL(post.url);
  const shownTarget = `${target.origin}${target.pathname}`;

  let response: Response;
  try {
    response = await fetch(post.url, {
      method: 'POST',
      headers: post.headers,
      body: JSON.stringify(post.body),
      signal: combined,
      redirect: 'manual',
    });
  } catch (error) {
    if (signal.aborted) throw abortedError(signal, post.secret);
    throw new ProviderError(
      `could not reach the provider at ${shownTarget}: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
    );
  }

  try {
    if (response.status < 200 || response.status > 299) {
      const excerpt = errorExcerpt(await readErrorBody(response), post.secret);
      local.abort();
      if (signal.aborted) throw abortedError(signal, post.secret);
      const statusText = safeExcerpt(response.statusText, post.secret, 60);
      throw new ProviderError(
        `the provider answered HTTP ${response.status}${statusText === '' ? '' : ` ${statusText}`}${excerpt === '' ? '' : `: ${excerpt}`}`,
        'http',
        response.status,
      );
    }

    const bytes = await readCappedBody(response, TYPED_RESPONSE_MAX_BYTES, () => local.abort());
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
    local.abort();
    throw new ProviderError(
      `the connection to the provider at ${shownTarget} failed while reading the response: ${safeExcerpt(describeNetworkFailure(error), post.secret)}`,
      'network',
    );
  }
}

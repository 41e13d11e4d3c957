import dns from 'node:dns';
import type { ClientRequest } from 'node:http';
import { http, https } from '../node-http.js';
import { abortable, isAbortError } from 'abort-controller-x';
import net, { type LookupFunction } from 'node:net';
import { SCHEMA_KEY_BODY_MAX_BYTES, SCHEMA_KEY_FETCH_TIMEOUT_MS, SCHEMA_KEY_URL_MAX_BYTES } from '../limits.js';
import { foldToOneLine } from '../text/one-line-text.js';
import { judgeAddress } from './address-policy.js';
import { keyUrlPort } from './pin-host.js';
import { SchemaPinCheckError, SchemaPinInputError } from './schemapin-errors.js';

// Fetches the body of a SchemaPin public_key_url without letting the URL steer
// the server into places it should not go: https only, every resolved address
// checked, the connection made to exactly the checked addresses (the socket's
// own lookup is replaced, so a second DNS answer cannot differ), no redirects,
// one deadline for the whole exchange and a byte cap on the streamed body.

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface KeyFetchOptions {
  /** Allows http: and loopback/private addresses; for local tests only. */
  allowInsecure: boolean;
  /** Whole-fetch deadline (DNS, connect, TLS, body); defaults to SCHEMA_KEY_FETCH_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Name resolution; defaults to the system resolver (dns.lookup, all addresses). */
  resolveHost?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Additional trusted CA certificates (PEM) for https; the system store is used otherwise. */
  ca?: string | Buffer;
}

const INSECURE_HINT = 'SYMBIONT_SCHEMAPIN_ALLOW_INSECURE=1 allows this for local tests only';
const LOCATION_SHOWN_MAX = 200;

/** Checks the key URL's size and syntax before anything else happens. */
export function parseKeyUrl(text: string): URL {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > SCHEMA_KEY_URL_MAX_BYTES) {
    throw new SchemaPinInputError(`public_key_url is ${bytes} bytes; the limit is ${SCHEMA_KEY_URL_MAX_BYTES} bytes (8 KiB)`);
  }
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new SchemaPinInputError('public_key_url is not an absolute URL; expected https://host/path');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new SchemaPinInputError(`public_key_url uses ${url.protocol}; only https:// key URLs are fetched`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new SchemaPinInputError('public_key_url must not carry credentials (user:password@)');
  }
  if (url.hostname === '') throw new SchemaPinInputError('public_key_url has no host; expected https://host/path');
  keyUrlPort(url); // refuses port 0 before any network access
  return url;
}

/** Fetches the key URL's body under the address, redirect, deadline and size rules above; every failure is one SchemaPinCheckError line. */
export async function fetchKeyBody(url: URL, options: KeyFetchOptions): Promise<Buffer> {
  if (url.protocol === 'http:' && !options.allowInsecure) {
    throw new SchemaPinCheckError(`refused: plain http:// key URLs are not fetched; use https:// (${INSECURE_HINT})`);
  }
  const timeoutMs = options.timeoutMs ?? SCHEMA_KEY_FETCH_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const timeoutMessage = `fetching the key URL took longer than ${timeoutMs / 1000} s; gave up`;
  try {
    const hostname = bareHostname(url);
    const addresses = await withDeadline(resolve(hostname, options), deadline.signal, timeoutMessage);
    checkAddresses(hostname, addresses, options.allowInsecure);
    return await request(url, hostname, addresses, options, deadline.signal, timeoutMessage);
  } finally {
    clearTimeout(timer);
  }
}

function bareHostname(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

async function resolve(hostname: string, options: KeyFetchOptions): Promise<ResolvedAddress[]> {
  const family = net.isIP(hostname);
  if (family === 4 || family === 6) return [{ address: hostname, family }];
  try {
    if (options.resolveHost) return await options.resolveHost(hostname);
    const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
    return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  } catch (err) {
    throw new SchemaPinCheckError(`could not resolve the key URL's host ${hostname} (${(err as NodeJS.ErrnoException).code ?? 'DNS error'})`);
  }
}

function checkAddresses(hostname: string, addresses: ResolvedAddress[], allowInsecure: boolean): void {
  if (addresses.length === 0) throw new SchemaPinCheckError(`the key URL's host ${hostname} resolves to no address`);
  for (const { address } of addresses) {
    const verdict = judgeAddress(address, allowInsecure);
    if (verdict.allowed) continue;
    const which = address === hostname ? `the key URL's address ${address}` : `the key URL's host ${hostname} resolves to ${address}, which`;
    const hint = allowInsecure ? 'this kind is never contacted' : `key URLs must reach a public address; ${INSECURE_HINT} (loopback and private ranges)`;
    throw new SchemaPinCheckError(`refused: ${which} is a ${verdict.kind} address; ${hint}`);
  }
}

/**
 * A socket lookup that answers only with the addresses already checked: no
 * second DNS query. It answers on the next tick, as dns.lookup always does:
 * answered synchronously, a connect that fails at once (ENETUNREACH) destroys
 * the socket inside http(s).request(), before the request has an error
 * listener, and over https tls.connect then throws on the destroyed socket.
 */
function checkedLookup(hostname: string, addresses: ResolvedAddress[]): LookupFunction {
  return (name, lookupOptions, callback) => {
    const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? addresses.filter((a) => a.family === lookupOptions.family) : addresses;
    process.nextTick(() => {
      if (name !== hostname || wanted.length === 0) {
        const err: NodeJS.ErrnoException = new Error(`no checked address for ${name}`);
        err.code = 'ENOTFOUND';
        callback(err, '', 0);
      } else if (lookupOptions.all) {
        (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(
          null,
          wanted.map((a) => ({ address: a.address, family: a.family })),
        );
      } else {
        callback(null, wanted[0]!.address, wanted[0]!.family);
      }
    });
  };
}

function request(
  url: URL,
  hostname: string,
  addresses: ResolvedAddress[],
  options: KeyFetchOptions,
  signal: AbortSignal,
  timeoutMessage: string,
): Promise<Buffer> {
  return new Promise<Buffer>((resolvePromise, rejectPromise) => {
    let settled = false;
    let req: ClientRequest | undefined;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      req?.destroy();
      rejectPromise(new SchemaPinCheckError(message));
    };
    const succeed = (body: Buffer) => {
      if (settled) return;
      settled = true;
      resolvePromise(body);
    };
    const common = {
      host: hostname,
      // The port the pin is keyed by (pin-host.ts), so the two cannot disagree.
      port: keyUrlPort(url),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: { accept: 'application/json, application/x-pem-file, text/plain', 'user-agent': 'symbi-mcp-schemapin' },
      agent: false as const,
      lookup: checkedLookup(hostname, addresses),
    };
    try {
      req = url.protocol === 'https:' ? https.request({ ...common, ...(options.ca === undefined ? {} : { ca: options.ca }) }) : http.request(common);
    } catch (err) {
      // Node.js validates some options synchronously; such a throw is still a failed fetch.
      fail(`could not fetch the key URL: ${describeNetworkError(err)}`);
      return;
    }

    const onAbort = () => fail(timeoutMessage);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => signal.removeEventListener('abort', onAbort);

    req.on('error', (err) => {
      cleanup();
      fail(`could not fetch the key URL: ${describeNetworkError(err)}`);
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        const location = typeof res.headers.location === 'string' ? ` to ${foldToOneLine(res.headers.location, LOCATION_SHOWN_MAX)}` : '';
        cleanup();
        res.resume();
        fail(`the key URL answered HTTP ${status} (a redirect${location}); redirects are not followed, give the final key URL`);
        return;
      }
      if (status !== 200) {
        cleanup();
        res.resume();
        fail(`the key URL answered HTTP ${status}; expected 200 with the public key`);
        return;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > SCHEMA_KEY_BODY_MAX_BYTES) {
        cleanup();
        fail(`the key document is ${declared} bytes; the limit is ${SCHEMA_KEY_BODY_MAX_BYTES} bytes (64 KiB)`);
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > SCHEMA_KEY_BODY_MAX_BYTES) {
          cleanup();
          fail(`the key document is larger than the limit of ${SCHEMA_KEY_BODY_MAX_BYTES} bytes (64 KiB)`);
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        cleanup();
        succeed(Buffer.concat(chunks));
      });
      res.on('error', (err) => {
        cleanup();
        fail(`could not read the key URL's body: ${foldToOneLine(err.message)}`);
      });
      res.on('aborted', () => {
        cleanup();
        fail("the key URL's connection closed before the body was complete");
      });
    });
    req.end();
  });
}

/**
 * One line for a socket, DNS or TLS error: its code and message. With several
 * addresses Node.js tries each (autoSelectFamily) and reports an
 * AggregateError with an empty message; its members' codes say what happened.
 */
function describeNetworkError(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    const parts = new Set(err.errors.map((e: unknown) => describeNetworkError(e)));
    return [...parts].join('; ');
  }
  if (!(err instanceof Error)) return foldToOneLine(String(err));
  const code = (err as NodeJS.ErrnoException).code;
  // "connect ENETUNREACH 10.0.0.1:443 - Local (0.0.0.0:0)": the local end says nothing useful.
  const message = foldToOneLine(err.message).replace(/ - Local \([^)]*\)$/, '');
  if (code === undefined || message.includes(code)) return message || 'unknown error';
  return message === '' ? code : `${code} ${message}`;
}

async function withDeadline<T>(work: Promise<T>, signal: AbortSignal, message: string): Promise<T> {
  try {
    return await abortable(signal, work);
  } catch (err) {
    // The deadline's abort is said as the check's own one-line error; any other failure passes through.
    if (isAbortError(err)) throw new SchemaPinCheckError(message);
    throw err;
  }
}

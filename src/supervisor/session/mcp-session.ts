import { PassThrough, type Readable, type Writable } from 'node:stream';
import { McpServer, type CacheHint } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { MiB, STDIN_LINE_MAX_BYTES, STDOUT_BACKLOG_MAX_BYTES } from '../../shared/limits.js';
import { packageVersion } from '../../shared/package-version.js';
import type { SessionContext } from '../startup/session-context.js';
import { StdinLineLimiter } from './stdin-line-limiter.js';
import { IncomingMessageGate } from './incoming-message-gate.js';
import { overlongLineAnswer } from './incoming-message-check.js';
import { RequestLedger } from './request-ledger.js';
import type { RequestsRead } from './shutdown.js';
import { registerProjectFileTools } from '../tools/project-file-tools.js';
import { registerVerifySchemaTool } from '../tools/verify-schema-tool.js';
import { insecureWarning, schemapinInsecureFromEnv } from '../../shared/schemapin/insecure-mode.js';

// One MCP session over stdio, both protocol generations: the SDK's serveStdio entry
// (@modelcontextprotocol/server/stdio) decides each connection's era from its opening
// message (an `initialize`, or any message without the 2026-07-28 `_meta` envelope:
// 2024-11-05 ... 2025-11-25; a request carrying the envelope: 2026-07-28, where
// `server/discover` answers) and builds the server for it from createMcpServer below,
// every tool registered. In front of the SDK, standard input goes through the line
// limiter and the message gate (which answers malformed messages itself), and every
// request the SDK is handed is kept in the session's request ledger until it is
// answered (request-ledger.ts). Its whole lifecycle is here: startMcpSession(), and
// the returned requests (which shutdown drains) and closeSession(), which the process
// shutdown logic calls (and which runs by itself when standard input ends).
//
// The SDK's stdio transport closes itself when its input ends, and the SDK then aborts
// every handler in flight without answering it (docs/architecture.md, "The MCP SDK and
// what sits in front of it"). Its input is therefore a stream of its own, fed by the
// gate and ended only by closeSession: the end of standard input reaches the shutdown
// steps, which answer every request read and finalise every run before the transport
// closes.

const SERVER_NAME = 'symbi-mcp';
const SERVER_VERSION = packageVersion;
// Log the first few malformed messages one by one, then only every Nth, so a flood of garbage cannot flood stderr.
const MALFORMED_LOG_FIRST = 100;
const MALFORMED_LOG_EVERY = 1000;

/**
 * How long a 2026-07-28 client may reuse a list result (`ttlMs`): the tools, the resources and the
 * capabilities are fixed when the process starts (the startup snapshot) and cannot change until it
 * restarts, so any lifetime is true while the process lives; an hour bounds what a cache that
 * outlives the process (a gateway's) keeps. resources/read reads AGENTS.md now: the SDK's default
 * (`ttlMs` 0, private) stays.
 */
export const LIST_TTL_MS = 3_600_000;

/**
 * The cache hints the SDK puts on 2026-07-28 results (2025-era results never carry them). The tool
 * list and the discovery result are the same for every caller of this build ("public"); the
 * resource lists name a file of this project ("private").
 */
export const CACHE_HINTS: Readonly<Record<'server/discover' | 'tools/list' | 'resources/list' | 'resources/templates/list', CacheHint>> = {
  'server/discover': { ttlMs: LIST_TTL_MS, cacheScope: 'public' },
  'tools/list': { ttlMs: LIST_TTL_MS, cacheScope: 'public' },
  'resources/list': { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
  'resources/templates/list': { ttlMs: LIST_TTL_MS, cacheScope: 'private' },
};

/**
 * The fixed words an SDK error starts with, cut before the first quote, colon or
 * bracket: the SDK and JSON.parse append or quote the client's bytes after them.
 */
function sdkErrorWords(err: Error): string {
  const words = err.message
    .split(/[:'"`[{(]/, 1)[0]!
    .trim()
    .slice(0, 120);
  return words === '' ? err.name : words;
}

export interface SessionIo {
  stdin: Readable;
  stdout: Writable;
}

export interface SessionOptions {
  /**
   * Registers invoke_agent (the lead's tool needs the run owner table and the
   * worker pool, which the process lifecycle owns). Absent: the server offers
   * the project file tools and verify_schema only. Called once per server the
   * SDK builds for the connection (a 2026-07-28 probe's, then a 2025-era one's).
   */
  registerInvokeAgent?: (server: McpServer) => void;
  /**
   * Called when standard input ends. Default: close the session at once. The
   * shutdown logic replaces it to drain live runs before closing.
   */
  onInputEnd?: (session: McpSession) => void;
  /**
   * Called once the client has opened the session: a 2025-era client's `initialized`
   * notification, or a 2026-07-28 client's first request (that era has no handshake).
   */
  onClientReady?: () => void;
  /** The environment verify_schema reads its testing switch from; process.env when absent. */
  env?: NodeJS.ProcessEnv;
}

export interface McpSession {
  /** The requests read and not yet answered; shutdown stops admitting and drains them. */
  readonly requests: RequestsRead;
  /** Resolves with the reason once the session has closed. */
  readonly closed: Promise<string>;
  /** Closes the transport (idempotent). Runs by itself when standard input ends. */
  closeSession(reason: string): Promise<void>;
}

/**
 * The request methods this server answers, in either era (the SDK answers them for the
 * capabilities declared, tools and resources; `initialize` and `ping` exist only in 2024-11-05 ...
 * 2025-11-25, `server/discover` only in 2026-07-28, and the SDK answers the other era's method
 * -32601 or -32022). The message gate answers every other method -32601 itself, among them
 * `subscriptions/listen`: the lists never change while the process lives, so there is nothing to
 * listen for. test/process/malformed-jsonrpc.test.ts holds the two lists equal.
 */
export const SERVED_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** Collects the name of every tool registered on `server` into `names`: the gate refuses any other name. */
function recordToolNames(server: McpServer, names: Set<string>): void {
  const register = server.registerTool.bind(server) as (name: string, ...rest: unknown[]) => ReturnType<McpServer['registerTool']>;
  server.registerTool = (name: string, ...rest: unknown[]) => {
    names.add(name);
    return register(name, ...rest);
  };
}

/** Builds one SDK server with every tool of this session (invoke_agent only when `options` brings it); `tools` collects their names. */
function createMcpServer(context: SessionContext, options: SessionOptions, tools: Set<string>, schemapinLog: (line: string) => void): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      // listChanged false: the lists are fixed at startup (the SDK would otherwise advertise true).
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
      instructions:
        'Governed Symbiont server: list_agents, get_agent_dsl, parse_dsl and get_agents_md read the project through a pinned directory; invoke_agent returns one policy-checked text response with a signed audit reference.',
      cacheHints: CACHE_HINTS,
    },
  );
  recordToolNames(server, tools);
  registerProjectFileTools(server, context);
  registerVerifySchemaTool(server, {
    project: context.project,
    log: schemapinLog,
    allowInsecure: schemapinInsecureFromEnv(options.env ?? process.env),
  });
  options.registerInvokeAgent?.(server);
  return server;
}

/** Serves MCP on `io` through the line limiter and the message gate until standard input ends or closeSession is called. */
export function startMcpSession(
  context: SessionContext,
  io: SessionIo = { stdin: process.stdin, stdout: process.stdout },
  options: SessionOptions = {},
): Promise<McpSession> {
  const { log } = context;
  let malformed = 0;
  const reportMalformed = (reason: string): void => {
    malformed++;
    if (malformed <= MALFORMED_LOG_FIRST || malformed % MALFORMED_LOG_EVERY === 0) {
      log.warn(`malformed message from the client: ${reason}`, { event: 'client.malformed', malformed_total: malformed });
    }
  };
  // verify_schema only logs its insecure-mode warning and internal errors, both operator warnings;
  // the warning once per process, however many servers the SDK builds.
  let insecureWarned = false;
  const schemapinLog = (line: string): void => {
    if (line === insecureWarning()) {
      if (insecureWarned) return;
      insecureWarned = true;
    }
    log.warn(line.replace(/^warning: /, ''), { event: 'schemapin.warning' });
  };
  let ready = false;
  const clientReady = (): void => {
    if (ready) return;
    ready = true;
    options.onClientReady?.();
  };
  // The first server is built now, so the gate knows the tools' names before the first line.
  const tools = new Set<string>();
  let prebuilt: McpServer | undefined = createMcpServer(context, options, tools, schemapinLog);
  const factory = ({ era }: { era: 'legacy' | 'modern' }): McpServer => {
    const server = prebuilt ?? createMcpServer(context, options, tools, schemapinLog);
    prebuilt = undefined;
    // The gate passes on only messages the SDK's schema accepts, so what reaches
    // here is the rest (a response to an unknown request id, say), under the same
    // rate limit: a client can send those in a flood too.
    server.server.onerror = (err: Error) => reportMalformed(`not answered: ${sdkErrorWords(err)}`);
    if (era === 'modern') queueMicrotask(clientReady);
    else server.server.oninitialized = clientReady;
    return server;
  };

  const answer = (message: Record<string, unknown>): void => {
    if (io.stdout.writable) io.stdout.write(`${JSON.stringify(message)}\n`);
  };
  // Input waits while answers wait: 'drain' comes once the client has read them all.
  const outputRoom = (): Promise<void> | void => {
    if (!io.stdout.writable || io.stdout.writableLength <= STDOUT_BACKLOG_MAX_BYTES) return;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        io.stdout.off('drain', done).off('close', done).off('error', done);
        resolve();
      };
      io.stdout.on('drain', done).on('close', done).on('error', done);
    });
  };
  const limiter = new StdinLineLimiter(STDIN_LINE_MAX_BYTES, {
    onDroppedLine: (bytes) => {
      answer(overlongLineAnswer(bytes, STDIN_LINE_MAX_BYTES));
      reportMalformed(`answered -32600: an input line of ${bytes} bytes, longer than the ${STDIN_LINE_MAX_BYTES}-byte line limit, was dropped`);
    },
  });
  const gate = new IncomingMessageGate({ answer, report: reportMalformed, outputRoom }, { methods: SERVED_METHODS, tools });
  // What the SDK's transport reads: the gate's lines, never its end (see the top of this file).
  const sdkInput = new PassThrough();
  io.stdin.pipe(limiter).pipe(gate).pipe(sdkInput, { end: false });

  let resolveClosed!: (reason: string) => void;
  const closed = new Promise<string>((resolve) => (resolveClosed = resolve));
  let closeReason: string | null = null;
  let closing: Promise<void> | null = null;

  // The limiter only forwards whole lines of at most the cap, so this bound (the SDK's default is
  // 10 MB) is never reached by one message: the limiter's is the limit in force.
  const ledger = new RequestLedger();
  const transport = ledger.around(new StdioServerTransport(sdkInput, io.stdout, { maxBufferSize: 2 * STDIN_LINE_MAX_BYTES + MiB }), () =>
    resolveClosed(closeReason ?? 'transport closed'),
  );
  const inputHandled = new Promise<void>((resolve) => gate.once('end', resolve));
  const requests: RequestsRead = {
    stopAdmitting: (message) => {
      ledger.stopAdmitting(message);
      // What was read from standard input still goes through the limiter and the gate, and a
      // request among it is answered; nothing more is read.
      io.stdin.unpipe(limiter);
      for (let chunk: unknown = io.stdin.read(); chunk !== null; chunk = io.stdin.read()) limiter.write(chunk);
      if (!limiter.writableEnded) limiter.end();
      // A closed session reads nothing more: the gate's end never comes then.
      return Promise.race([inputHandled, closed.then(() => undefined)]);
    },
    answered: (timeoutMs) => ledger.answered(timeoutMs),
    answerRemaining: (message) => ledger.answerRemaining(message),
  };

  const handle = serveStdio(factory, {
    transport,
    // What the entry itself refuses or drops (a response before any era, a discarded probe), rate limited like the rest.
    onerror: (err: Error) => reportMalformed(`the SDK's stdio entry said: ${sdkErrorWords(err)}`),
  });

  const closeSession = (reason: string): Promise<void> => {
    if (closing) return closing;
    closeReason = reason;
    io.stdin.unpipe(limiter);
    closing = handle.close().then(
      () => resolveClosed(reason),
      () => resolveClosed(reason),
    );
    return closing;
  };

  const session: McpSession = { requests, closed, closeSession };
  const onInputEnd = options.onInputEnd ?? (() => void closeSession('standard input ended'));
  gate.on('end', () => onInputEnd(session));
  io.stdin.on('error', () => void closeSession('standard input failed'));
  // A client that went away makes stdout writes fail with EPIPE; that must not crash the process.
  io.stdout.on('error', () => void closeSession('standard output closed'));
  return Promise.resolve(session);
}

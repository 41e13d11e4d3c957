import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
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
import { schemapinInsecureFromEnv } from '../../shared/schemapin/insecure-mode.js';

// One MCP session over stdio: the SDK server with every tool registered,
// reading standard input through the line limiter and the message gate
// (which answers malformed messages itself), with every request the SDK is
// handed kept in the session's request ledger until it is answered
// (request-ledger.ts). Its whole lifecycle is here: startMcpSession(), and the
// returned requests (which shutdown drains) and closeSession(), which the
// process shutdown logic calls (and which runs by itself when standard input ends).

const SERVER_NAME = 'symbi-mcp';
const SERVER_VERSION = packageVersion;
// Log the first few malformed messages one by one, then only every Nth, so a flood of garbage cannot flood stderr.
const MALFORMED_LOG_FIRST = 100;
const MALFORMED_LOG_EVERY = 1000;

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
   * the project file tools and verify_schema only.
   */
  registerInvokeAgent?: (server: McpServer) => void;
  /**
   * Called when standard input ends. Default: close the session at once. The
   * shutdown logic replaces it to drain live runs before closing.
   */
  onInputEnd?: (session: McpSession) => void;
  /** The environment verify_schema reads its testing switch from; process.env when absent. */
  env?: NodeJS.ProcessEnv;
}

export interface McpSession {
  readonly server: McpServer;
  /** The requests read and not yet answered; shutdown stops admitting and drains them. */
  readonly requests: RequestsRead;
  /** Resolves with the reason once the session has closed. */
  readonly closed: Promise<string>;
  /** Closes the transport (idempotent). Runs by itself when standard input ends. */
  closeSession(reason: string): Promise<void>;
}

/**
 * The request methods the SDK answers for this server's capabilities (tools and resources; the SDK
 * sets their handlers when they are declared, and always answers initialize and ping). The message
 * gate answers every other method -32601 itself; test/process/malformed-jsonrpc.test.ts holds the two lists equal.
 */
export const SERVED_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** Collects the name of every tool registered on `server` from now on: the gate refuses any other name. */
function recordToolNames(server: McpServer): ReadonlySet<string> {
  const names = new Set<string>();
  const register = server.registerTool.bind(server) as (name: string, ...rest: unknown[]) => ReturnType<McpServer['registerTool']>;
  server.registerTool = ((name: string, ...rest: unknown[]) => {
    names.add(name);
    return register(name, ...rest);
  }) as McpServer['registerTool'];
  return names;
}

/** The SDK server with every tool of this session registered (invoke_agent only when `options` brings it), and their names. */
function createMcpServer(context: SessionContext, options: SessionOptions = {}): { server: McpServer; tools: ReadonlySet<string> } {
  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        'Governed Symbiont server: list_agents, get_agent_dsl, parse_dsl and get_agents_md read the project through a pinned directory; invoke_agent returns one policy-checked text response with a signed audit reference.',
    },
  );
  const tools = recordToolNames(server);
  registerProjectFileTools(server, context);
  // verify_schema only logs its insecure-mode warning and internal errors, both operator warnings.
  registerVerifySchemaTool(server, {
    project: context.project,
    log: (line: string) => context.log.warn(line.replace(/^warning: /, ''), { event: 'schemapin.warning' }),
    allowInsecure: schemapinInsecureFromEnv(options.env ?? process.env),
  });
  options.registerInvokeAgent?.(server);
  return { server, tools };
}

/** Serves MCP on `io` through the line limiter and the message gate until standard input ends or closeSession is called. */
export async function startMcpSession(
  context: SessionContext,
  io: SessionIo = { stdin: process.stdin, stdout: process.stdout },
  options: SessionOptions = {},
): Promise<McpSession> {
  const { log } = context;
  const { server, tools } = createMcpServer(context, options);
  let malformed = 0;
  const reportMalformed = (reason: string): void => {
    malformed++;
    if (malformed <= MALFORMED_LOG_FIRST || malformed % MALFORMED_LOG_EVERY === 0) {
      log.warn(`malformed message from the client: ${reason}`, { event: 'client.malformed', malformed_total: malformed });
    }
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
  io.stdin.pipe(limiter).pipe(gate);
  // The limiter only forwards whole lines of at most the cap, so this bound is never reached by one message.
  const ledger = new RequestLedger();
  const transport = ledger.around(new StdioServerTransport(gate, io.stdout, { maxBufferSize: 2 * STDIN_LINE_MAX_BYTES + MiB }));
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

  // The gate passes on only messages the SDK's schema accepts, so what reaches
  // here is the rest (a response to an unknown request id, say), under the same
  // rate limit: a client can send those in a flood too.
  server.server.onerror = (err: Error) => {
    reportMalformed(`not answered: ${sdkErrorWords(err)}`);
  };

  let resolveClosed!: (reason: string) => void;
  const closed = new Promise<string>((resolve) => (resolveClosed = resolve));
  let closeReason: string | null = null;
  let closing: Promise<void> | null = null;
  server.server.onclose = () => resolveClosed(closeReason ?? 'transport closed');

  const closeSession = (reason: string): Promise<void> => {
    if (closing) return closing;
    closeReason = reason;
    io.stdin.unpipe(limiter);
    closing = server.close().then(
      () => resolveClosed(reason),
      () => resolveClosed(reason),
    );
    return closing;
  };

  const session: McpSession = { server, requests, closed, closeSession };
  const onInputEnd = options.onInputEnd ?? (() => void closeSession('standard input ended'));
  gate.on('end', () => onInputEnd(session));
  io.stdin.on('error', () => void closeSession('standard input failed'));
  // A client that went away makes stdout writes fail with EPIPE; that must not crash the process.
  io.stdout.on('error', () => void closeSession('standard output closed'));

  await server.connect(transport);
  return session;
}

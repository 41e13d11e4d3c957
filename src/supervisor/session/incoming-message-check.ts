import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  DiscoverRequestSchema,
  InitializedNotificationSchema,
  InitializeRequestSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResponseSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ProgressNotificationSchema,
  ReadResourceRequestSchema,
  RootsListChangedNotificationSchema,
} from '@modelcontextprotocol/core';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { describeType, quoteForMessage, toolError } from '../tools/tool-arguments.js';
import { isRecord } from '../../shared/json-value.js';

// Judges one line from standard input before the SDK sees it. The SDK drops
// whatever its message schema rejects with no answer, so the client would wait
// until its own timeout; here every malformed request gets a JSON-RPC error,
// per JSON-RPC 2.0 (https://www.jsonrpc.org/specification, sections 4.1, 5
// and 5.1) and the MCP revisions the SDK negotiates. What "well formed" means
// comes from the SDK's public schemas (@modelcontextprotocol/core: the JSON-RPC
// message shapes its stdio transport parses every line with, and each served
// method's request), named one by one below:
// - a line that is not UTF-8 JSON: -32700, id null;
// - a batch (an array): one -32600, id null, and nothing in it runs. MCP
//   2025-03-26 is the only revision with batches (a receiver MUST accept
//   them); 2025-06-18 removed them
//   (https://modelcontextprotocol.io/specification/2025-06-18/changelog), and
//   the SDK serving this session never processed them in any revision. So the
//   server does not offer 2025-03-26: an `initialize` asking for it goes on to
//   the SDK asking for 2024-11-05 instead (BATCHLESS_REVISION), which the
//   server then answers, as MCP's version negotiation lets a server answer a
//   revision it does not support with one it does; every revision the server
//   does negotiate leaves batches out, and one clear error beats half-handling
//   (the MCP conformance suite's json-rpc-batch-rejection scenario expects
//   rejection too). A batch made only of notifications is logged, not
//   answered (nothing awaits an answer);
// - a value that is not a valid request: -32600, with the request's id when it
//   is a valid MCP id (a string or an integer within +-(2^53-1)), else null;
// - invalid params of a method the SDK knows: -32602, one line;
// - tools/call arguments that are not an object, or that carry `__proto__`
//   (which the SDK's argument copy would silently drop): a tool result with
//   isError and one line, like every other bad argument;
// - a request for a method this server does not serve (its capabilities are
//   tools and resources): -32601, before its params are judged, so a probe
//   for a method of another revision is told "not found", not "bad params";
// - a request carrying MCP 2026-07-28's per-request envelope
//   (`_meta["io.modelcontextprotocol/protocolVersion"]`) for a revision this
//   server does not serve, or the envelope's other keys without a version:
//   -32022 (UnsupportedProtocolVersionError, with the revisions it does serve),
//   as that revision's versioning page says (basic/versioning.mdx), whichever
//   era the connection is in;
// - a tools/call `name` that names no tool of this server: -32602, the protocol
//   error MCP's tools page lists for an unknown tool (the SDK answers it with
//   an isError result instead), naming the tools; the name cut and escaped,
//   where the SDK would echo it whole in "Tool ... not found";
// - a resources/read `uri` that is not a URI (the SDK's own URL parse would
//   throw and answer -32603), or longer than RESOURCE_URI_MAX_CHARS: -32602.
// Notifications (a string `method`, no `id` member) are never answered, as
// JSON-RPC 2.0 section 4.1 says, malformed or not; a malformed one is logged.
// Responses from the client are never answered either (that could loop).
// Error ids are `null` as JSON-RPC 2.0 section 5 requires; MCP 2025-11-25's
// schema also allows leaving the id out, and both mean "unknown request".
// A UTF-8 byte-order mark at the start of a line is ignored, as RFC 8259
// section 8.1 allows: the line is judged and forwarded without it.

export type JsonRpcId = string | number;

/** What this session serves: the request methods its handlers answer, and its tools' names. */
export interface ServedSurface {
  methods: ReadonlySet<string>;
  tools: ReadonlySet<string>;
}

export type IncomingVerdict =
  /** A well-formed message: hand the line to the SDK (without a leading byte-order mark), or `line` instead when given. */
  | { kind: 'forward'; line?: string }
  /** Answer with this message (an error, or an isError tool result); `reason` is for the operator log. */
  | { kind: 'answer'; message: Record<string, unknown>; reason: string }
  /** Nothing to answer (a notification or a client response that is malformed); log `reason`. */
  | { kind: 'ignore'; reason: string }
  /** A blank line between messages: not a message at all. */
  | { kind: 'blank' };

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** JSON-RPC 2.0's error codes (section 5.1), and MCP 2026-07-28's for an unsupported protocol version (schema.ts). */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The revisions of the per-request era this server serves (the SDK's server/discover lists the same; a test holds them equal). */
export const MODERN_REVISIONS: readonly string[] = ['2026-07-28'];
/** The `_meta` keys of 2026-07-28's per-request envelope (schema.ts, RequestMetaObject). */
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const ENVELOPE_KEYS = [
  PROTOCOL_VERSION_KEY,
  'io.modelcontextprotocol/clientInfo',
  'io.modelcontextprotocol/clientCapabilities',
  'io.modelcontextprotocol/logLevel',
];
/** A resource URI longer than this is refused: the SDK echoes the URI of a resource it does not know. */
const RESOURCE_URI_MAX_CHARS = 2048;
const REQUEST_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);
const NOTIFICATION_MEMBERS = new Set(['jsonrpc', 'method', 'params']);
const VALID_ID = 'a string or an integer between -(2^53-1) and 2^53-1';

const utf8 = new TextDecoder('utf-8', { fatal: true });

// The SDK's public per-method schemas, so "invalid params" means exactly what its handlers would
// reject: one for each method this server serves (mcp-session.ts SERVED_METHODS), and the client
// notifications it acts on. Any other notification passes on if its message shape is right.
const REQUEST_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['initialize', InitializeRequestSchema],
  ['ping', PingRequestSchema],
  ['server/discover', DiscoverRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['tools/call', CallToolRequestSchema],
  ['resources/list', ListResourcesRequestSchema],
  ['resources/templates/list', ListResourceTemplatesRequestSchema],
  ['resources/read', ReadResourceRequestSchema],
]);
const NOTIFICATION_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['notifications/cancelled', CancelledNotificationSchema],
  ['notifications/initialized', InitializedNotificationSchema],
  ['notifications/progress', ProgressNotificationSchema],
  ['notifications/roots/list_changed', RootsListChangedNotificationSchema],
]);

// A number is safe to show (it cannot hold a prompt) and says why it was refused: 1.5, 1e+300.
function describeId(value: unknown): string {
  if (typeof value !== 'number') return describeType(value);
  // Past 2^53 JSON.parse has already rounded the number, so showing it would mislead.
  return Number.isInteger(value) && !Number.isSafeInteger(value) ? 'an integer beyond 2^53-1' : String(value);
}

/** Whether `value` is an id MCP accepts: a string, or an integer within ±(2^53-1). */
function isValidId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

function errorMessage(id: JsonRpcId | null, code: number, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function resultMessage(id: JsonRpcId, result: CallToolResult): Record<string, unknown> {
  return { jsonrpc: '2.0', id, result };
}

/** The first schema issue as one short line: where, then what. */
function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'does not match the method schema';
  const where = issue.path.length > 0 ? issue.path.map(String).join('.') : 'params';
  return `${where}: ${issue.message.split('\n')[0]}`;
}

/** Why `params` (and its `_meta`) cannot belong to any JSON-RPC message MCP accepts, or null. */
function envelopeParamsProblem(message: Record<string, unknown>): string | null {
  if (!('params' in message)) return null;
  const params = message.params;
  if (!isRecord(params)) return `"params" must be an object, got ${describeType(params)}`;
  if (!('_meta' in params)) return null;
  const meta = params._meta;
  if (!isRecord(meta)) return `"params._meta" must be an object, got ${describeType(meta)}`;
  if ('progressToken' in meta && !isValidId(meta.progressToken)) {
    return `"params._meta.progressToken" must be ${VALID_ID}, got ${describeId(meta.progressToken)}`;
  }
  return null;
}

function unexpectedMember(message: Record<string, unknown>, allowed: Set<string>): string | null {
  const extra = Object.keys(message).find((key) => !allowed.has(key));
  return extra === undefined ? null : `unexpected member ${JSON.stringify(extra.slice(0, 40))}; a request has only jsonrpc, id, method and params`;
}

function toolLabel(name: string): string {
  return /^[\w.-]{1,64}$/.test(name) ? name : JSON.stringify(name.slice(0, 64));
}

/** The tools/call cases that are bad tool arguments rather than bad params: answered as tool errors. */
function toolArgumentsProblem(params: Record<string, unknown>): string | null {
  if (typeof params.name !== 'string' || !('arguments' in params) || params.arguments === undefined) return null;
  const tool = toolLabel(params.name);
  const args = params.arguments;
  if (!isRecord(args))
    return `${tool}: arguments must be an object, got ${describeType(args)}; give the arguments as a JSON object (tools/list shows each tool's fields)`;
  // JSON.parse makes "__proto__" an own key, but the SDK copies arguments into a
  // new object, where assigning "__proto__" sets the prototype and the key
  // vanishes; it must be refused here. "constructor" and "prototype" survive the
  // copy and each tool refuses them as unknown, naming the arguments it takes.
  if (Object.prototype.hasOwnProperty.call(args, '__proto__')) return `${tool}: unknown argument "__proto__"; "__proto__" is never an argument name`;
  return null;
}

/** Why a resources/read `uri` (a string, as the schema checked) cannot name a resource, or null. */
function resourceUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string') return null;
  if (uri.length > RESOURCE_URI_MAX_CHARS) return `uri: ${uri.length} characters; a resource URI here is at most ${RESOURCE_URI_MAX_CHARS}`;
  return URL.canParse(uri) ? null : 'uri: not a URI (resources/list names the resources)';
}

/**
 * Why a request's per-request envelope names no revision this server serves, or null: a version
 * outside MODERN_REVISIONS, or the envelope's other keys with no version at all. A request with no
 * envelope key is a 2025-era request (the SDK serves it as such); a version of the wrong type is a
 * malformed envelope, which the SDK answers -32602.
 */
function unsupportedVersion(params: Record<string, unknown> | undefined): { what: string; requested?: string } | null {
  const meta = params?._meta;
  if (!isRecord(meta) || !ENVELOPE_KEYS.some((key) => key in meta)) return null;
  const served = `this server serves ${MODERN_REVISIONS.join(', ')} with the per-request _meta envelope, and 2024-11-05 to 2025-11-25 through initialize`;
  if (!(PROTOCOL_VERSION_KEY in meta)) return { what: `the request's _meta has no "${PROTOCOL_VERSION_KEY}"; ${served}` };
  const requested = meta[PROTOCOL_VERSION_KEY];
  if (typeof requested !== 'string' || MODERN_REVISIONS.includes(requested)) return null;
  return { what: `${quoteForMessage(requested, 40)}; ${served}`, requested: requested.slice(0, 40) };
}

function judgeNotification(message: Record<string, unknown>, method: string): IncomingVerdict {
  const problem =
    (message.jsonrpc !== '2.0' ? '"jsonrpc" must be "2.0"' : null) ?? unexpectedMember(message, NOTIFICATION_MEMBERS) ?? envelopeParamsProblem(message);
  if (problem !== null) return { kind: 'ignore', reason: `malformed notification (not answered): ${problem}` };
  const schema = NOTIFICATION_SCHEMAS.get(method);
  if (schema !== undefined) {
    const parsed = schema.safeParse({ method, ...(message.params !== undefined ? { params: message.params } : {}) });
    if (!parsed.success) return { kind: 'ignore', reason: `malformed ${method} notification (not answered): ${firstIssue(parsed.error)}` };
    return { kind: 'forward' };
  }
  // A method the SDK has no schema for still passes its message schema, or the SDK would drop it unheard.
  const envelope = JSONRPCNotificationSchema.safeParse(message);
  if (!envelope.success) return { kind: 'ignore', reason: `malformed notification (not answered): ${firstIssue(envelope.error)}` };
  return { kind: 'forward' };
}

function judgeClientResponse(message: Record<string, unknown>): IncomingVerdict {
  if (JSONRPCResponseSchema.safeParse(message).success) return { kind: 'forward' };
  return { kind: 'ignore', reason: 'malformed response from the client (responses are never answered)' };
}

function judgeRequest(message: Record<string, unknown>, served: ServedSurface): IncomingVerdict {
  const id = isValidId(message.id) ? message.id : null;
  const invalid = (what: string): IncomingVerdict => ({
    kind: 'answer',
    message: errorMessage(id, INVALID_REQUEST, `Invalid Request: ${what}`),
    reason: `answered -32600: ${what}`,
  });
  if (message.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0"');
  if (!('method' in message)) return invalid('"method" is missing');
  if (typeof message.method !== 'string') return invalid(`"method" must be a string, got ${describeType(message.method)}`);
  if (!('id' in message)) return invalid('a request needs an "id"');
  if (id === null) return invalid(`"id" must be ${VALID_ID}, got ${describeId(message.id)}`);
  const problem = unexpectedMember(message, REQUEST_MEMBERS) ?? envelopeParamsProblem(message);
  if (problem !== null) return invalid(problem);

  const method = message.method;
  const params = message.params as Record<string, unknown> | undefined;
  if (!served.methods.has(method)) {
    // The SDK's message schema (which checks `_meta`) must accept it first, as for any request.
    const envelope = JSONRPCRequestSchema.safeParse(message);
    if (!envelope.success) return invalid(firstIssue(envelope.error));
    const what = `Method not found: ${quoteForMessage(method)}; this server serves ${[...served.methods].sort().join(', ')}`;
    return {
      kind: 'answer',
      message: errorMessage(id, METHOD_NOT_FOUND, what),
      reason: `answered -32601: a method of ${method.length} characters it does not serve`,
    };
  }
  const version = unsupportedVersion(params);
  if (version !== null) {
    const data = version.requested === undefined ? { supported: [...MODERN_REVISIONS] } : { supported: [...MODERN_REVISIONS], requested: version.requested };
    return {
      kind: 'answer',
      message: { jsonrpc: '2.0', id, error: { code: UNSUPPORTED_PROTOCOL_VERSION, message: `Unsupported protocol version: ${version.what}`, data } },
      // The operator hears what was wrong, never the client's bytes.
      reason:
        version.requested === undefined
          ? 'answered -32022: a request envelope without a protocol version'
          : `answered -32022: a protocol version of ${version.requested.length} characters it does not serve`,
    };
  }
  if (method === 'tools/call' && params !== undefined && typeof params.name === 'string' && !served.tools.has(params.name)) {
    const shape = TOOL_NAME.test(params.name) ? '' : ' (tool names are 1 to 128 letters, digits, "_", "-" or ".")';
    const what = `Invalid params for tools/call: unknown tool ${quoteForMessage(params.name)}${shape}; the tools are ${[...served.tools].sort().join(', ')}`;
    return {
      kind: 'answer',
      message: errorMessage(id, INVALID_PARAMS, what),
      reason: `answered -32602: an unknown tool name of ${params.name.length} characters`,
    };
  }
  if (method === 'tools/call' && params !== undefined) {
    const argumentsProblem = toolArgumentsProblem(params);
    if (argumentsProblem !== null) {
      return { kind: 'answer', message: resultMessage(id, toolError(argumentsProblem)), reason: `answered a tool error: ${argumentsProblem}` };
    }
  }
  const schema = REQUEST_SCHEMAS.get(method);
  if (schema !== undefined) {
    const parsed = schema.safeParse({ method, ...(params !== undefined ? { params } : {}) });
    const problem = parsed.success ? (method === 'resources/read' ? resourceUriProblem(params?.uri) : null) : firstIssue(parsed.error);
    if (problem !== null) {
      const what = `Invalid params for ${method}: ${problem}`;
      return { kind: 'answer', message: errorMessage(id, INVALID_PARAMS, what), reason: `answered -32602: ${what}` };
    }
    return { kind: 'forward' };
  }
  // A served method the SDK has no schema for still passes its message schema, or the SDK would drop it unheard.
  const envelope = JSONRPCRequestSchema.safeParse(message);
  if (!envelope.success) return invalid(firstIssue(envelope.error));
  return { kind: 'forward' };
}

function judgeBatch(batch: unknown[]): IncomingVerdict {
  const onlyNotifications = batch.length > 0 && batch.every((m) => isRecord(m) && !('id' in m) && typeof m.method === 'string');
  const what =
    'JSON-RPC batches are not supported (MCP 2025-06-18 removed batching, and the server does not offer 2025-03-26); send each message on its own line';
  if (onlyNotifications) return { kind: 'ignore', reason: `a batch of ${batch.length} notifications (not answered): ${what}` };
  return {
    kind: 'answer',
    message: errorMessage(null, INVALID_REQUEST, `Invalid Request: ${what}`),
    reason: `answered -32600: a batch of ${batch.length} messages`,
  };
}

const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf] as const;

/** The line without a leading UTF-8 byte-order mark: what is judged is what the SDK is given. */
export function withoutByteOrderMark(line: Buffer): Buffer {
  return line[0] === BYTE_ORDER_MARK[0] && line[1] === BYTE_ORDER_MARK[1] && line[2] === BYTE_ORDER_MARK[2] ? line.subarray(3) : line;
}

/** Judges one line (its newline and a trailing CR may be present; a leading byte-order mark is ignored). */
export function judgeIncomingLine(line: Uint8Array, served: ServedSurface): IncomingVerdict {
  let text: string;
  try {
    // The decoder drops a leading byte-order mark (ignoreBOM is false), like withoutByteOrderMark.
    text = utf8.decode(line);
  } catch {
    return {
      kind: 'answer',
      message: errorMessage(null, PARSE_ERROR, 'Parse error: the line is not valid UTF-8'),
      reason: 'answered -32700: not valid UTF-8',
    };
  }
  if (text.trim().length === 0) return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return {
      kind: 'answer',
      message: errorMessage(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'),
      reason: 'answered -32700: not valid JSON',
    };
  }
  if (Array.isArray(value)) return judgeBatch(value);
  if (!isRecord(value)) {
    const what = `a message must be a JSON object, got ${describeType(value)}`;
    return { kind: 'answer', message: errorMessage(null, INVALID_REQUEST, `Invalid Request: ${what}`), reason: `answered -32600: ${what}` };
  }
  if (!('method' in value) && ('result' in value || 'error' in value)) return judgeClientResponse(value);
  if (typeof value.method === 'string' && !('id' in value)) return judgeNotification(value, value.method);
  const verdict = judgeRequest(value, served);
  return verdict.kind === 'forward' && value.method === 'initialize' ? withoutBatchRevision(value) : verdict;
}

/** The MCP revision whose receivers must accept JSON-RPC batches, which this server does not offer (see above). */
const BATCH_REVISION = '2025-03-26';
/** The revision offered instead: the one before it, which every client of 2025-03-26 knows, and which has no batches. */
const BATCHLESS_REVISION = '2024-11-05';

/** A valid `initialize`, asking for BATCHLESS_REVISION where it asked for BATCH_REVISION. */
function withoutBatchRevision(request: Record<string, unknown>): IncomingVerdict {
  const params = request.params as Record<string, unknown>;
  if (params.protocolVersion !== BATCH_REVISION) return { kind: 'forward' };
  return { kind: 'forward', line: `${JSON.stringify({ ...request, params: { ...params, protocolVersion: BATCHLESS_REVISION } })}\n` };
}

/** The answer to a line dropped for its length: its id cannot be read, so the error carries null. */
export function overlongLineAnswer(bytes: number, limit: number): Record<string, unknown> {
  return errorMessage(null, INVALID_REQUEST, `Invalid Request: the message is ${bytes} bytes; one line is limited to ${limit} bytes`);
}

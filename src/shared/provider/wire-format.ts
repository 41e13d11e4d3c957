import { shortIdentifier, type FinishMapping, type FinishReason, type NormalizedFinish } from './finish-vocabulary.js';

// What one wire format (a request and answer shape a provider speaks) declares, in one object: its
// URL and key header, the request body, the answer's parser, how its error body is read and what
// each failure it really sends means, its finish values, the name of its output limit, the shape of
// its keys, and how a fake endpoint reads a request back. The declarations are wire-*.ts; the table
// of them is WIRE_FORMATS in provider-kinds.ts, and everything that differs by wire format reads it
// (docs/development.md, "Adding a model provider"). Nothing here does I/O: the worker sends the
// request (src/worker/providers/wire-call.ts) and turns a parser's findings into its errors.

/** One message of the typed request the journal hashes. */
export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

export interface TypedInferenceUsage {
  input_tokens: number | null;
  output_tokens: number | null;
}

/** The typed response every wire format's answer is read into (the journal hashes it as canonical JSON). */
export interface TypedInferenceResponse {
  content: string;
  /**
   * Tool calls the model proposed; the caller withholds any response that has one. Each is OpenAI's
   * `{id, type, function: {name, arguments}}` or Anthropic's `{id, name, input}` as the provider sent
   * it; a wire format with another shape puts its call in the second (symbiont-response.ts reads both).
   */
  tool_calls: unknown[];
  /** The provider-neutral finish reason (finish-vocabulary.ts); only `complete` is ever released. */
  finish_reason: FinishReason;
  /** The provider's own finish value when its wire format's rows name it, else null. */
  provider_finish_reason: string | null;
  usage: TypedInferenceUsage | null;
  model: string | null;
  /** Set when the provider's strings held unpaired surrogates, replaced with U+FFFD (well-formed-response.ts): never released. */
  not_well_formed?: true;
}

/** The request field that carries the output limit on the OpenAI wire format, where the endpoint decides. */
export type TokenLimitParameter = 'max_tokens' | 'max_completion_tokens';

export const TOKEN_LIMIT_PARAMETERS: readonly TokenLimitParameter[] = ['max_tokens', 'max_completion_tokens'];

/**
 * How a wire format names the output limit in its request. `chosen`: the endpoint decides between
 * the names listed (a provider declares its default per host, SYMBI_TOKEN_LIMIT_PARAMETER overrides
 * it, and a 400 naming the field sent is tried once with the other name). Otherwise always `field`
 * (a dotted path for a nested field).
 */
export type OutputLimit = { chosen: false; field: string } | { chosen: true; fields: readonly TokenLimitParameter[] };

/** What a request body is built from. */
export interface WireRequest {
  conversation: readonly ChatMessage[];
  model: string;
  maxOutputTokens: number;
  /** The output limit's name, used only where the wire format lets the endpoint choose it. */
  limitParameter: TokenLimitParameter;
}

/**
 * The failures a parser can find, made by its caller (the worker's ProviderError): a parser says what
 * it found, in our words, and never quotes the answer.
 */
export interface AnswerChecks {
  /** The answer is not what the wire format describes; `detail` names what is missing or wrong. */
  malformed(detail: string): Error;
  /** The provider reported an error inside an HTTP 200 answer. */
  reported(errorBody: unknown, where: 'in the answer' | 'while generating the answer'): Error;
  /** A finish value the rows do not name: its spelling goes to standard error only. */
  unrecognizedFinish(finish: NormalizedFinish): void;
}

/** The identifiers and the message of a provider error body, each identifier only when it is a short identifier. */
export interface ErrorFields {
  /** The most specific error identifier the provider sent (OpenAI's `code`, Anthropic's `type`, Google's `ErrorInfo.reason`): journaled as error_type. */
  errorType?: string;
  /** Google's canonical status (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...), which an explanation may be keyed by. */
  errorStatus?: string;
  /** OpenAI's `param`: the request field the error is about (max_tokens, ...). */
  param?: string;
  requestId?: string;
  /** A numeric code that is an HTTP status (100 to 599). */
  code?: number;
  message?: string;
  /** How long the body asks to wait before a retry (Google's RetryInfo.retryDelay), in milliseconds. */
  retryAfterMs?: number;
}

/** What an explanation of a failure may name: the configuration a user can change, never a key. */
export interface ExplainContext {
  model: string;
  modelVariable: string;
  keyVariable: string;
  /** Whether a key was sent at all. */
  keySent: boolean;
  baseUrlVariable: string;
  /** What the provider's base URL looks like (its declaration). */
  baseUrlShape: string;
  /** The output limit's field as sent, and whether SYMBI_TOKEN_LIMIT_PARAMETER can change it. */
  limitField: string;
  limitSwitchable: boolean;
}

/** Our words for one failure a provider of the wire format sends: its HTTP status and, where it says more, its error code or status. */
export interface FailureExplanation {
  status: number;
  /** The provider's error identifier that narrows it (matched against ErrorFields.errorType and errorStatus); none: any body. */
  code?: string;
  explain: (context: ExplainContext) => string;
}

/** The request headers a fake endpoint sees (node:http's IncomingHttpHeaders). */
export type SeenHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** How a fake endpoint (src/demo/synthetic-endpoint.ts) recognizes and reads back a request in the wire format. */
export interface FakeRequestReader {
  /** Any POST path ending so is taken for this wire format. */
  pathSuffix: string;
  /** The text of the last user message: where a `[[mode]]` directive is looked for. */
  prompt: (body: unknown) => string;
  /** The model the request names, in its body or its path; undefined when it names none. */
  model: (body: unknown, path: string) => string | undefined;
  /** The key the request carried, or "" without one. */
  key: (headers: SeenHeaders) => string;
}

export interface WireFormatDeclaration {
  /** How the documentation names it. */
  title: string;
  /** The specification of its request and answer. */
  reference: string;
  /** What its answer is, for "the provider response is not ...". */
  answerName: string;
  /** The URL a request is POSTed to. */
  url: (baseUrl: string, model: string) => string;
  /** The model name is part of the URL path: it is checked (modelPathProblem) before it gets there. */
  modelInPath: boolean;
  /** The request headers: JSON both ways and the key (never in the URL). */
  headers: (apiKey: string) => Record<string, string>;
  /** The exact body sent; never any tools. */
  body: (request: WireRequest) => unknown;
  outputLimit: OutputLimit;
  /** The answer as the typed response; tool calls are returned, never acted on. */
  parse: (json: unknown, checks: AnswerChecks) => TypedInferenceResponse;
  /** The identifiers and message of its error body. */
  errorFields: (body: unknown) => ErrorFields;
  /** Our words for the failures it sends whose meaning the HTTP status alone does not give (first match wins). */
  failures: readonly FailureExplanation[];
  finish: {
    /** How the documentation names the field (for the finish table). */
    field: string;
    /** Every value the field can hold that this server names, with what it means. */
    rows: readonly FinishMapping[];
    /** What else in an answer decides a finish, per finish, for the documentation (a refusal field, a blocked prompt). */
    alsoRead: Partial<Record<FinishReason, string>>;
  };
  /** Text shaped like one of its keys, removed from anything a provider or a library writes (key-redaction.ts). No flags: it is combined. */
  keyShape: RegExp;
  fake: FakeRequestReader;
}

// Small readers for untrusted provider JSON: they check a shape and never throw on surprises.

/** Whether `value` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Symbiont's token counts are `u32` (inference.rs `Usage`). */
const U32_MAX = 0xffff_ffff;

/**
 * A non-negative integer token count, or null when absent or not a count. A count above 2^32-1
 * (Symbiont's `u32`) is clamped to it: such a count is more than any call reserves, so the
 * settlement is `exceeded` and the answer withheld, and the journal still holds only values
 * Symbiont's types read.
 */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? Math.min(value, U32_MAX) : null;
}

/** The value when it is a string, else null. */
export function optionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** The one value of a header, or "" when absent. */
export function headerText(headers: SeenHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/**
 * Why a model name cannot go into a URL path, or undefined when it can: a character that ends or
 * changes the path (`/`, `\`, `?`, `#`, `%`), a `..`, white space, control characters, or anything
 * outside printable ASCII.
 */
export function modelPathProblem(model: string): string | undefined {
  if (/\s/.test(model)) return 'contains white space';
  // oxlint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(model)) return 'contains control characters';
  for (const character of ['/', '\\', '?', '#', '%']) {
    if (model.includes(character)) return `contains "${character}"`;
  }
  if (model.includes('..')) return 'contains ".."';
  if (!/^[\x21-\x7e]+$/.test(model)) return 'contains characters other than printable ASCII';
  return undefined;
}

/**
 * The fields of the error shapes OpenAI `{error: {message, type, code, param}}`, Anthropic `{type:
 * "error", error: {type, message}, request_id}` and OpenRouter `{error: {code, message}}` share.
 */
export function commonErrorFields(parsed: unknown): ErrorFields {
  if (!isRecord(parsed)) return {};
  const error = parsed.error;
  const fields: ErrorFields = {};
  if (typeof error === 'string') fields.message = error;
  if (isRecord(error)) {
    // OpenAI's string `code` is the most specific; OpenRouter's numeric `code` is an HTTP-like status.
    const type = (typeof error.code === 'string' ? shortIdentifier(error.code) : null) ?? (typeof error.type === 'string' ? shortIdentifier(error.type) : null);
    if (type !== null) fields.errorType = type;
    const param = typeof error.param === 'string' ? shortIdentifier(error.param) : null;
    if (param !== null) fields.param = param;
    // Kept only when it is an HTTP status a journal can carry as one (100 to 599); any other number is not one.
    if (typeof error.code === 'number' && Number.isSafeInteger(error.code) && error.code >= 100 && error.code <= 599) fields.code = error.code;
    if (typeof error.message === 'string') fields.message = error.message;
  }
  if (fields.message === undefined && typeof parsed.message === 'string') fields.message = parsed.message;
  const requestId = shortIdentifier(parsed.request_id);
  if (requestId !== null) fields.requestId = requestId;
  return fields;
}

/** The text of the last message with role "user" in a `messages` array (OpenAI and Anthropic requests). */
export function lastUserMessageText(body: unknown): string {
  const messages = isRecord(body) ? body.messages : undefined;
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message: unknown = messages[i];
    if (isRecord(message) && message.role === 'user') return contentText(message.content);
  }
  return '';
}

/** A message's content as text: a string, or the text of its parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/** The `model` string of a request body. */
export function bodyModel(body: unknown): string | undefined {
  return isRecord(body) && typeof body.model === 'string' ? body.model : undefined;
}

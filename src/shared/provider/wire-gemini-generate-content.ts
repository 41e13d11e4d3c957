import { CUT_AT_OUTPUT_LIMIT, normalizeWith, shortIdentifier, type FinishMapping, type FinishReason } from './finish-vocabulary.js';
import {
  commonErrorFields,
  headerText,
  isRecord,
  optionalString,
  tokenCount,
  type AnswerChecks,
  type ErrorFields,
  type TypedInferenceResponse,
  type TypedInferenceUsage,
  type WireFormatDeclaration,
} from './wire-format.js';

// Google's Gemini API, `models.generateContent` (checked 2026-12-06):
// https://ai.google.dev/api/generate-content
// POST {base}/v1beta/models/{model}:generateContent with the key in the `x-goog-api-key` header
// (never in the URL: a `?key=` would land in every proxy's and server's access log). The system
// text travels in `systemInstruction`, the user messages as the parts of one user turn, the output
// limit as `generationConfig.maxOutputTokens` (https://ai.google.dev/api/generate-content#generationconfig).
//
// The answer: `candidates[0].content.parts[]`. A part with `thought: true` is the model's thinking
// (https://ai.google.dev/gemini-api/docs/thinking) and never part of the judged answer; a part with
// `functionCall` (or `executableCode`) is a proposal to act, withheld, kept in the `{id, name,
// input}` shape TypedInferenceResponse.tool_calls asks for. A prompt blocked by the
// safety filters comes back with no candidates and `promptFeedback.blockReason`
// (https://ai.google.dev/gemini-api/docs/safety-settings): read as `filtered`.
//
// Errors are Google's JSON error body, `{error: {code, message, status, details[]}}`
// (https://ai.google.dev/gemini-api/docs/troubleshooting): `status` is the canonical code
// (INVALID_ARGUMENT, FAILED_PRECONDITION, PERMISSION_DENIED, NOT_FOUND, RESOURCE_EXHAUSTED, INTERNAL,
// UNAVAILABLE, DEADLINE_EXCEEDED), a `google.rpc.ErrorInfo` detail carries the `reason` (a bad key is
// HTTP 400 INVALID_ARGUMENT with reason API_KEY_INVALID, a key problem, not a model problem), and a
// `google.rpc.RetryInfo` detail the `retryDelay` ("30s") a 429 asks for
// (https://cloud.google.com/apis/design/errors#error_details).

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo';

export interface GeminiGenerateContentBody {
  systemInstruction?: { parts: { text: string }[] };
  contents: { role: 'user'; parts: { text: string }[] }[];
  generationConfig: { maxOutputTokens: number };
}

// `Candidate.finishReason` (https://ai.google.dev/api/generate-content#FinishReason) and, for a
// blocked prompt, `PromptFeedback.blockReason` (#BlockReason: SAFETY, OTHER, BLOCKLIST,
// PROHIBITED_CONTENT, IMAGE_SAFETY), which share their names and are read through the same rows.
const FINISH_ROWS: readonly FinishMapping[] = [
  { raw: 'STOP', finish: 'complete', explanation: 'the model finished its answer' },
  { raw: 'MAX_TOKENS', finish: 'truncated', explanation: `${CUT_AT_OUTPUT_LIMIT} (a thinking model may have spent it all on thinking)` },
  { raw: 'SAFETY', finish: 'filtered', explanation: "the provider's safety filters blocked the prompt or the answer" },
  { raw: 'RECITATION', finish: 'filtered', explanation: 'the provider withheld the answer as a recitation of a source' },
  { raw: 'BLOCKLIST', finish: 'filtered', explanation: 'the prompt or the answer holds a term of a blocklist' },
  { raw: 'PROHIBITED_CONTENT', finish: 'filtered', explanation: 'the provider blocked prohibited content in the prompt or the answer' },
  { raw: 'SPII', finish: 'filtered', explanation: 'the provider withheld the answer for sensitive personal information' },
  { raw: 'IMAGE_SAFETY', finish: 'filtered', explanation: "the provider's safety filters blocked an image" },
  { raw: 'IMAGE_PROHIBITED_CONTENT', finish: 'filtered', explanation: 'the provider blocked prohibited content in an image' },
  { raw: 'IMAGE_RECITATION', finish: 'filtered', explanation: 'the provider withheld an image as a recitation of a source' },
  { raw: 'MALFORMED_FUNCTION_CALL', finish: 'tool_use', explanation: 'the model proposed a malformed function call' },
  { raw: 'UNEXPECTED_TOOL_CALL', finish: 'tool_use', explanation: 'the model proposed a tool call, and no tool was offered' },
  { raw: 'TOO_MANY_TOOL_CALLS', finish: 'tool_use', explanation: 'the model proposed too many tool calls' },
  { raw: 'LANGUAGE', finish: 'error', explanation: 'the provider stopped: the language is not supported' },
  { raw: 'MALFORMED_RESPONSE', finish: 'error', explanation: 'the provider stopped: its answer was malformed' },
  { raw: 'MISSING_THOUGHT_SIGNATURE', finish: 'error', explanation: 'the provider stopped: a thought signature was missing' },
  { raw: 'NO_IMAGE', finish: 'error', explanation: 'the provider stopped: no image was made' },
  { raw: 'IMAGE_OTHER', finish: 'unknown', explanation: 'the provider stopped making an image for a reason it did not name' },
  { raw: 'OTHER', finish: 'unknown', explanation: 'the provider stopped for a reason it did not name' },
  { raw: 'FINISH_REASON_UNSPECIFIED', finish: 'unknown', explanation: 'the provider left the finish reason unspecified' },
];

/** A google.protobuf.Duration in its JSON form ("30s", "1.5s") in milliseconds, or undefined. */
export function protobufDurationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(value);
  if (match === null) return undefined;
  const fraction = (match[2] ?? '').padEnd(9, '0');
  return Number(match[1]) * 1000 + Math.ceil(Number(fraction) / 1_000_000);
}

/** Google's error body: the common fields, its canonical status, ErrorInfo's reason and RetryInfo's delay. */
function errorFields(parsed: unknown): ErrorFields {
  const fields = commonErrorFields(parsed);
  const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined;
  if (error === undefined) return fields;
  const status = typeof error.status === 'string' ? shortIdentifier(error.status) : null;
  if (status !== null) {
    fields.errorStatus = status;
    fields.errorType ??= status;
  }
  for (const detail of Array.isArray(error.details) ? (error.details as unknown[]) : []) {
    if (!isRecord(detail)) continue;
    if (detail['@type'] === ERROR_INFO) {
      // The reason (API_KEY_INVALID, ...) is the most specific identifier Google sends.
      const reason = typeof detail.reason === 'string' ? shortIdentifier(detail.reason) : null;
      if (reason !== null) fields.errorType = reason;
    } else if (detail['@type'] === RETRY_INFO) {
      const wait = protobufDurationMs(detail.retryDelay);
      if (wait !== undefined) fields.retryAfterMs = wait;
    }
  }
  return fields;
}

function usageOf(metadata: unknown): TypedInferenceUsage | null {
  if (!isRecord(metadata)) return null;
  const answer = tokenCount(metadata.candidatesTokenCount);
  const thoughts = tokenCount(metadata.thoughtsTokenCount);
  // Thinking is output the model generated and is billed for, as OpenAI counts reasoning tokens.
  return {
    input_tokens: tokenCount(metadata.promptTokenCount),
    output_tokens: answer === null && thoughts === null ? null : tokenCount((answer ?? 0) + (thoughts ?? 0)),
  };
}

function candidateParts(candidate: Record<string, unknown>, checks: AnswerChecks): unknown[] {
  // A candidate stopped by a filter, or one whose budget went to thinking, may have no content or no parts.
  if (candidate.content === undefined || candidate.content === null) return [];
  if (!isRecord(candidate.content)) throw checks.malformed('candidates[0].content is not an object');
  const parts = candidate.content.parts;
  if (parts === undefined || parts === null) return [];
  if (!Array.isArray(parts)) throw checks.malformed('candidates[0].content.parts is not an array');
  return parts as unknown[];
}

function parse(json: unknown, checks: AnswerChecks): TypedInferenceResponse {
  if (!isRecord(json)) throw checks.malformed('the body is not a JSON object');
  // A gateway in front of the API may put Google's error body in an HTTP 200.
  if (isRecord(json.error) && json.candidates === undefined) throw checks.reported(json, 'in the answer');
  const usage = usageOf(json.usageMetadata);
  const model = optionalString(json.modelVersion);
  const candidates = json.candidates;
  if (candidates === undefined || (Array.isArray(candidates) && candidates.length === 0)) {
    // A blocked prompt: no candidates, and the reason in promptFeedback.
    const feedback = json.promptFeedback;
    if (!isRecord(feedback) || feedback.blockReason === undefined || feedback.blockReason === null) {
      throw checks.malformed('candidates is missing or empty and promptFeedback has no blockReason');
    }
    const named = normalizeWith(FINISH_ROWS, feedback.blockReason);
    checks.unrecognizedFinish(named);
    return { content: '', tool_calls: [], finish_reason: 'filtered', provider_finish_reason: named.providerValue, usage, model };
  }
  if (!Array.isArray(candidates)) throw checks.malformed('candidates is not an array');
  const candidate: unknown = candidates[0];
  if (!isRecord(candidate)) throw checks.malformed('candidates[0] is not an object');

  let text = '';
  const toolCalls: unknown[] = [];
  for (const part of candidateParts(candidate, checks)) {
    if (!isRecord(part)) throw checks.malformed('a part is not an object');
    // The model's thinking is never part of the answer that is judged and released.
    if (part.thought === true) continue;
    if (isRecord(part.functionCall)) {
      toolCalls.push({ type: 'functionCall', id: part.functionCall.id ?? '', name: part.functionCall.name, input: part.functionCall.args ?? {} });
    } else if (isRecord(part.executableCode)) {
      toolCalls.push({ type: 'executableCode', id: '', name: 'executableCode', input: part.executableCode });
    } else if (part.text !== undefined) {
      if (typeof part.text !== 'string') throw checks.malformed('a text part has no text');
      text += part.text;
    }
    // Other parts (a thought signature alone, inline data) carry no answer text.
  }

  const normalized = normalizeWith(FINISH_ROWS, candidate.finishReason);
  checks.unrecognizedFinish(normalized);
  const finish: FinishReason = toolCalls.length > 0 ? 'tool_use' : normalized.finish;
  return { content: text, tool_calls: toolCalls, finish_reason: finish, provider_finish_reason: normalized.providerValue, usage, model };
}

/** The last text part of the last user turn of a generateContent body: the last user message as this server sends it. */
function lastUserPart(body: unknown): string {
  const contents = isRecord(body) ? body.contents : undefined;
  if (!Array.isArray(contents)) return '';
  for (let i = contents.length - 1; i >= 0; i -= 1) {
    const content: unknown = contents[i];
    // `role` may be left out of a single-turn request; it is then the user's.
    if (!isRecord(content) || (content.role !== undefined && content.role !== 'user') || !Array.isArray(content.parts)) continue;
    const texts = (content.parts as unknown[]).filter((part): part is { text: string } => isRecord(part) && typeof part.text === 'string');
    if (texts.length > 0) return texts[texts.length - 1]!.text;
  }
  return '';
}

export const GEMINI_GENERATE_CONTENT = {
  title: 'Gemini generateContent',
  reference: 'https://ai.google.dev/api/generate-content',
  answerName: 'a Gemini generateContent answer',
  url: (baseUrl, model) => `${baseUrl}/v1beta/models/${model}:generateContent`,
  modelInPath: true,
  headers: (apiKey) => ({ 'Content-Type': 'application/json', Accept: 'application/json', 'x-goog-api-key': apiKey }),
  body: (request): GeminiGenerateContentBody => {
    const system = request.conversation.filter((m) => m.role === 'system').map((m) => m.content);
    const body: GeminiGenerateContentBody = {
      contents: [{ role: 'user', parts: request.conversation.filter((m) => m.role === 'user').map((m) => ({ text: m.content })) }],
      generationConfig: { maxOutputTokens: request.maxOutputTokens },
    };
    if (system.length > 0) body.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
    return body;
  },
  outputLimit: { chosen: false, field: 'generationConfig.maxOutputTokens' },
  parse,
  errorFields,
  // https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes: what the status alone would explain wrongly.
  failures: [
    { status: 400, code: 'API_KEY_INVALID', explain: (c) => `the key in ${c.keyVariable} was refused: it is not a valid API key` },
    {
      status: 400,
      code: 'FAILED_PRECONDITION',
      explain: (c) =>
        `the free tier of the Gemini API is not available where the request comes from; enable billing for the project of the key in ${c.keyVariable}`,
    },
    {
      status: 403,
      code: 'PERMISSION_DENIED',
      explain: (c) =>
        `the key in ${c.keyVariable} may not use the model "${c.model}" (set by ${c.modelVariable}) or the Gemini API; check the key's project and its restrictions`,
    },
    { status: 429, code: 'RESOURCE_EXHAUSTED', explain: (c) => `rate limited by the provider, or the quota of the project behind ${c.keyVariable} is used up` },
    { status: 503, code: 'UNAVAILABLE', explain: () => 'the provider is overloaded or temporarily unavailable' },
    { status: 504, code: 'DEADLINE_EXCEEDED', explain: () => 'the provider could not finish within its own deadline (a very long prompt or answer)' },
  ],
  finish: {
    field: '`finishReason`',
    rows: FINISH_ROWS,
    alsoRead: { filtered: 'a blocked prompt (`promptFeedback.blockReason`, no candidates)', tool_use: 'any `functionCall` part', unknown: 'none at all' },
  },
  // Google API keys: "AIza" and 35 more characters (Symbiont's log redaction uses the same shape, crates/runtime/src/logging.rs).
  keyShape: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/,
  fake: {
    pathSuffix: ':generateContent',
    prompt: lastUserPart,
    model: (_body, path) => /\/models\/([^/]+):generateContent$/.exec(path)?.[1],
    key: (headers) => headerText(headers, 'x-goog-api-key'),
  },
} as const satisfies WireFormatDeclaration;

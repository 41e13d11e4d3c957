import { CUT_AT_OUTPUT_LIMIT, normalizeWith, type FinishMapping, type FinishReason } from './finish-vocabulary.js';
import {
  bodyModel,
  commonErrorFields,
  headerText,
  isRecord,
  lastUserMessageText,
  optionalString,
  tokenCount,
  type AnswerChecks,
  type TokenLimitParameter,
  type TypedInferenceResponse,
  type WireFormatDeclaration,
} from './wire-format.js';

// OpenAI-compatible Chat Completions (OpenAI, Azure OpenAI v1, OpenRouter, Ollama, vLLM, LM Studio).
// https://platform.openai.com/docs/api-reference/chat
//
// Finish values (checked 2026-11-30), `choices[].finish_reason`: stop, length, content_filter,
// tool_calls, function_call (deprecated); a refusal arrives as `message.refusal` (content null) or as
// a content part of type "refusal" with finish_reason "stop".
// https://platform.openai.com/docs/api-reference/chat/object
// OpenRouter (same wire format): finish_reason "error" with a choice-level `error` object when the
// model failed mid-generation; https://openrouter.ai/docs/api-reference/errors and /docs/responses.
// A local OpenAI-compatible server (Ollama, vLLM, LM Studio) may leave finish_reason out or null;
// that answer is treated as complete, since those servers report an unfinished answer as "length".

export type OpenAiChatBody = {
  model: string;
  messages: { role: 'system' | 'user'; content: string }[];
} & { [limit in TokenLimitParameter]?: number };

const FINISH_ROWS: readonly FinishMapping[] = [
  { raw: 'stop', finish: 'complete', explanation: 'the model finished its answer' },
  { raw: null, finish: 'complete', explanation: 'the server gave no finish reason (a local server); treated as finished' },
  { raw: 'length', finish: 'truncated', explanation: `${CUT_AT_OUTPUT_LIMIT} (a reasoning model may have spent it all on thinking)` },
  { raw: 'content_filter', finish: 'filtered', explanation: "the provider's content filter withheld or cut the answer" },
  { raw: 'tool_calls', finish: 'tool_use', explanation: 'the model proposed a tool call' },
  { raw: 'function_call', finish: 'tool_use', explanation: 'the model proposed a function call' },
  { raw: 'error', finish: 'error', explanation: 'the provider reported an error while generating the answer' },
];

interface MessageText {
  text: string | null;
  /** The model refused: `message.refusal` is set, or a content part has type "refusal". */
  refused: boolean;
}

function messageText(message: Record<string, unknown>, checks: AnswerChecks): MessageText {
  const refusedByField = typeof message.refusal === 'string' && message.refusal !== '';
  const content = message.content;
  if (typeof content === 'string') return { text: content, refused: refusedByField };
  // Some compatible servers answer with content parts; join the text ones. A refusal part's text is never kept.
  if (Array.isArray(content)) {
    const parts = content.filter(isRecord);
    const text = parts.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
    return { text, refused: refusedByField || parts.some((part) => part.type === 'refusal') };
  }
  if (content === null || content === undefined) return { text: null, refused: refusedByField };
  throw checks.malformed('choices[0].message.content is neither text nor null');
}

function parse(json: unknown, checks: AnswerChecks): TypedInferenceResponse {
  if (!isRecord(json)) throw checks.malformed('the body is not a JSON object');
  // OpenRouter: an error reported inside an HTTP 200 answer.
  if (json.error !== undefined && json.error !== null && !Array.isArray(json.choices)) throw checks.reported(json, 'in the answer');
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length === 0) throw checks.malformed('choices is missing or empty');
  const choice: unknown = choices[0];
  if (!isRecord(choice)) throw checks.malformed('choices[0] is not an object');
  // OpenRouter: the model failed mid-generation (finish_reason "error" with an error object).
  if (isRecord(choice.error)) throw checks.reported({ error: choice.error }, 'while generating the answer');
  if (!isRecord(choice.message)) throw checks.malformed('choices[0].message is missing');
  const message = choice.message;

  const toolCalls: unknown[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) throw checks.malformed('choices[0].message.tool_calls is not an array');
    toolCalls.push(...(message.tool_calls as unknown[]));
  }
  // The legacy single function call is a tool call too.
  if (isRecord(message.function_call)) toolCalls.push({ type: 'function', function: message.function_call });

  const { text, refused } = messageText(message, checks);
  if (text === null && toolCalls.length === 0 && !refused) throw checks.malformed('choices[0].message has neither content nor tool calls');

  const normalized = normalizeWith(FINISH_ROWS, choice.finish_reason);
  checks.unrecognizedFinish(normalized);
  // A refusal or a proposed tool call decides the outcome whatever finish_reason says.
  const finish: FinishReason = refused ? 'refused' : toolCalls.length > 0 ? 'tool_use' : normalized.finish;
  const usage = isRecord(json.usage) ? { input_tokens: tokenCount(json.usage.prompt_tokens), output_tokens: tokenCount(json.usage.completion_tokens) } : null;
  return {
    content: text ?? '',
    tool_calls: toolCalls,
    finish_reason: finish,
    provider_finish_reason: normalized.providerValue,
    usage,
    model: optionalString(json.model),
  };
}

export const OPENAI_CHAT = {
  title: 'OpenAI Chat Completions',
  reference: 'https://platform.openai.com/docs/api-reference/chat',
  answerName: 'a chat completion',
  url: (baseUrl) => `${baseUrl}/chat/completions`,
  modelInPath: false,
  headers: (apiKey) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
    // Local servers need no key; an empty bearer would only confuse them.
    if (apiKey !== '') headers.Authorization = `Bearer ${apiKey}`;
    return headers;
  },
  // Model, messages and the output limit under the name the endpoint expects (max_completion_tokens
  // or max_tokens, see provider-kinds.ts), and deliberately no `tools`.
  body: (request): OpenAiChatBody => ({
    model: request.model,
    messages: request.conversation.map((message) => ({ role: message.role, content: message.content })),
    [request.limitParameter]: request.maxOutputTokens,
  }),
  outputLimit: { chosen: true, fields: ['max_tokens', 'max_completion_tokens'] },
  parse,
  errorFields: commonErrorFields,
  // The HTTP status says it all (http-failure-explanations.ts); OpenAI's codes narrow nothing we explain differently.
  failures: [],
  finish: {
    field: '`finish_reason`',
    rows: FINISH_ROWS,
    alsoRead: {
      complete: 'none at all (a local server that leaves it out)',
      truncated: 'also an empty answer from a reasoning model that spent its budget thinking',
      refused: 'a `message.refusal`, or a content part of type `refusal`',
      tool_use: 'any proposed tool call',
    },
  },
  // OpenAI's keys (sk-, sk-proj-), its restricted (rk-) and other prefixed keys, OpenRouter's sk-or-.
  keyShape: /\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}/,
  fake: {
    pathSuffix: '/chat/completions',
    prompt: lastUserMessageText,
    model: bodyModel,
    key: (headers) => {
      const auth = headerText(headers, 'authorization');
      return auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : '';
    },
  },
} as const satisfies WireFormatDeclaration;

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
  type TypedInferenceResponse,
  type WireFormatDeclaration,
} from './wire-format.js';

// Anthropic Messages API: the system text travels in `system`, the user messages in `messages`.
// https://platform.claude.com/docs/en/api/messages
//
// Finish values (checked 2026-11-30), `stop_reason`: end_turn, stop_sequence, max_tokens, tool_use,
// pause_turn, refusal, model_context_window_exceeded.
// https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons

export const ANTHROPIC_VERSION = '2023-06-01';

export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  system?: string;
  messages: { role: 'user'; content: string }[];
}

const FINISH_ROWS: readonly FinishMapping[] = [
  { raw: 'end_turn', finish: 'complete', explanation: 'the model finished its answer' },
  { raw: 'stop_sequence', finish: 'complete', explanation: 'the model reached a stop sequence' },
  { raw: 'max_tokens', finish: 'truncated', explanation: CUT_AT_OUTPUT_LIMIT },
  { raw: 'model_context_window_exceeded', finish: 'truncated', explanation: "the answer was cut off at the model's context window" },
  { raw: 'pause_turn', finish: 'truncated', explanation: 'the provider paused the turn before the answer was finished' },
  { raw: 'refusal', finish: 'refused', explanation: 'the model refused to answer' },
  { raw: 'tool_use', finish: 'tool_use', explanation: 'the model proposed a tool call' },
];

function parse(json: unknown, checks: AnswerChecks): TypedInferenceResponse {
  if (!isRecord(json)) throw checks.malformed('the body is not a JSON object');
  if (json.type === 'error') throw checks.reported(json, 'in the answer');
  if (!Array.isArray(json.content)) throw checks.malformed('content is missing or not an array');

  let text = '';
  const toolCalls: unknown[] = [];
  for (const block of json.content as unknown[]) {
    if (!isRecord(block) || typeof block.type !== 'string') throw checks.malformed('a content block has no type');
    if (block.type === 'text') {
      if (typeof block.text !== 'string') throw checks.malformed('a text block has no text');
      text += block.text;
    } else if (block.type.endsWith('tool_use')) {
      // tool_use, server_tool_use, mcp_tool_use: all are proposals to act, withheld by the caller.
      toolCalls.push(block);
    }
    // Other blocks (thinking and the like) carry no answer text.
  }

  const usage = isRecord(json.usage) ? { input_tokens: tokenCount(json.usage.input_tokens), output_tokens: tokenCount(json.usage.output_tokens) } : null;
  const normalized = normalizeWith(FINISH_ROWS, json.stop_reason);
  checks.unrecognizedFinish(normalized);
  const finish: FinishReason = toolCalls.length > 0 ? 'tool_use' : normalized.finish;
  return {
    content: text,
    tool_calls: toolCalls,
    finish_reason: finish,
    provider_finish_reason: normalized.providerValue,
    usage,
    model: optionalString(json.model),
  };
}

export const ANTHROPIC_MESSAGES = {
  title: 'Anthropic Messages',
  reference: 'https://platform.claude.com/docs/en/api/messages',
  answerName: 'an Anthropic message',
  url: (baseUrl) => `${baseUrl}/v1/messages`,
  modelInPath: false,
  // JSON both ways, the key and the API version Anthropic requires.
  headers: (apiKey) => ({
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'x-api-key': apiKey,
    'anthropic-version': ANTHROPIC_VERSION,
  }),
  body: (request): AnthropicMessagesBody => {
    const system = request.conversation.filter((m) => m.role === 'system').map((m) => m.content);
    const body: AnthropicMessagesBody = {
      model: request.model,
      max_tokens: request.maxOutputTokens,
      messages: request.conversation.filter((m) => m.role === 'user').map((m) => ({ role: 'user', content: m.content })),
    };
    if (system.length > 0) body.system = system.join('\n\n');
    return body;
  },
  outputLimit: { chosen: false, field: 'max_tokens' },
  parse,
  errorFields: commonErrorFields,
  // The HTTP status says it all (https://platform.claude.com/docs/en/api/errors: one type per status).
  failures: [],
  finish: {
    field: '`stop_reason`',
    rows: FINISH_ROWS,
    alsoRead: { tool_use: 'any tool-use block', unknown: 'none at all' },
  },
  // Anthropic's keys (sk-ant-api03-...); the OpenAI shape covers them too, declared here for this format's own sake.
  keyShape: /\bsk-ant-[A-Za-z0-9_-]{8,}/,
  fake: {
    pathSuffix: '/messages',
    prompt: lastUserMessageText,
    model: bodyModel,
    key: (headers) => headerText(headers, 'x-api-key'),
  },
} as const satisfies WireFormatDeclaration;

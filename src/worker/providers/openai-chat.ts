import { normalizeFinish, type FinishReason } from '../../shared/provider/finish-reasons.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { TokenLimitParameter } from '../../shared/provider/provider-kinds.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/provider/inference-types.js';
import { explainHttpStatus } from './http-failure-explanations.js';
import { ProviderError } from './provider-error.js';
import { postJson } from './provider-http.js';
import { noteUnrecognisedFinish, reportedError, type AnswerContext } from './reported-error.js';
import { isRecord, optionalString, tokenCount } from './response-fields.js';

// OpenAI-compatible Chat Completions (OpenAI, Azure OpenAI v1, OpenRouter, Ollama, vLLM, LM Studio).
// https://platform.openai.com/docs/api-reference/chat

export type OpenAiChatBody = {
  model: string;
  messages: { role: 'system' | 'user'; content: string }[];
} & { [limit in TokenLimitParameter]?: number };

/**
 * The exact body sent: model, messages and the output limit under the name the endpoint expects
 * (max_completion_tokens or max_tokens, see provider-config.ts), and deliberately no `tools`.
 */
export function openAiChatBody(request: TypedInferenceRequest, limitParameter: TokenLimitParameter = 'max_tokens'): OpenAiChatBody {
  return {
    model: request.options.model,
    messages: request.conversation.map((message) => ({ role: message.role, content: message.content })),
    [limitParameter]: request.options.max_tokens,
  };
}

/** The request headers: JSON both ways, and the bearer key when one is configured. */
export function openAiChatHeaders(config: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
  // Local servers need no key; an empty bearer would only confuse them.
  if (config.apiKey !== '') headers.Authorization = `Bearer ${config.apiKey}`;
  return headers;
}

function malformed(detail: string): ProviderError {
  return new ProviderError(`the provider response is not a chat completion: ${detail}`, 'malformed');
}

interface MessageText {
  text: string | null;
  /** The model refused: `message.refusal` is set, or a content part has type "refusal". */
  refused: boolean;
}

function messageText(message: Record<string, unknown>): MessageText {
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
  throw malformed('choices[0].message.content is neither text nor null');
}

/** Translates a Chat Completions JSON answer into the typed response; tool calls are returned, never acted on. */
export function parseOpenAiChatResponse(json: unknown, context: AnswerContext = {}): TypedInferenceResponse {
  if (!isRecord(json)) throw malformed('the body is not a JSON object');
  // OpenRouter: an error reported inside an HTTP 200 answer.
  if (json.error !== undefined && json.error !== null && !Array.isArray(json.choices)) throw reportedError(json, 'in the answer', context);
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length === 0) throw malformed('choices is missing or empty');
  const choice: unknown = choices[0];
  if (!isRecord(choice)) throw malformed('choices[0] is not an object');
  // OpenRouter: the model failed mid-generation (finish_reason "error" with an error object).
  if (isRecord(choice.error)) throw reportedError({ error: choice.error }, 'while generating the answer', context);
  if (!isRecord(choice.message)) throw malformed('choices[0].message is missing');
  const message = choice.message;

  const toolCalls: unknown[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) throw malformed('choices[0].message.tool_calls is not an array');
    toolCalls.push(...(message.tool_calls as unknown[]));
  }
  // The legacy single function call is a tool call too.
  if (isRecord(message.function_call)) toolCalls.push({ type: 'function', function: message.function_call });

  const { text, refused } = messageText(message);
  if (text === null && toolCalls.length === 0 && !refused) throw malformed('choices[0].message has neither content nor tool calls');

  const normalized = normalizeFinish('openai-chat', choice.finish_reason);
  noteUnrecognisedFinish(normalized, context);
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

/** One POST to the endpoint and its answer as the typed response; provider-chosen text for the operator goes to `operatorNotes`. */
export async function callOpenAiChat(
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  operatorNotes?: Pick<string[], 'push'>,
): Promise<TypedInferenceResponse> {
  const url = `${config.baseUrl}/chat/completions`;
  const answer = await postJson(
    {
      url,
      headers: openAiChatHeaders(config),
      body: openAiChatBody(request, config.tokenLimitParameter),
      secret: config.apiKey,
      proxy: config.proxy,
      explainStatus: (status) => explainHttpStatus(status, config),
    },
    signal,
  );
  return parseOpenAiChatResponse(answer.json, {
    url,
    requestId: answer.requestId,
    secret: config.apiKey,
    ...(operatorNotes !== undefined ? { operatorNotes } : {}),
  });
}

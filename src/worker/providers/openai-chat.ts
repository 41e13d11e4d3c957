import type { ProviderConfig } from '../../shared/provider-config.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/inference-types.js';
import { ProviderError } from './provider-error.js';
import { postJson } from './provider-http.js';
import { isRecord, optionalString, tokenCount } from './response-fields.js';

// OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM, LM Studio).

export interface OpenAiChatBody {
  model: string;
  messages: { role: 'system' | 'user'; content: string }[];
  max_tokens: number;
}

/** The exact body sent: model, messages and max_tokens, and deliberately no `tools`. */
export function openAiChatBody(request: TypedInferenceRequest): OpenAiChatBody {
  return {
    model: request.options.model,
    messages: request.conversation.map((message) => ({ role: message.role, content: message.content })),
    max_tokens: request.options.max_tokens,
  };
}

export function openAiChatHeaders(config: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
  // Local servers need no key; an empty bearer would only confuse them.
  if (config.apiKey !== '') headers.Authorization = `Bearer ${config.apiKey}`;
  return headers;
}

function malformed(detail: string): ProviderError {
  return new ProviderError(`the provider response is not a chat completion: ${detail}`, 'malformed');
}

function messageText(message: Record<string, unknown>): string | null {
  const content = message.content;
  if (typeof content === 'string') return content;
  // Some compatible servers answer with content parts; join the text ones.
  if (Array.isArray(content)) {
    const texts = content.filter(isRecord).map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''));
    return texts.join('');
  }
  if (content === null || content === undefined) {
    return typeof message.refusal === 'string' ? message.refusal : null;
  }
  throw malformed('choices[0].message.content is neither text nor null');
}

/** Translates a Chat Completions JSON answer into the typed response; tool calls are returned, never acted on. */
export function parseOpenAiChatResponse(json: unknown): TypedInferenceResponse {
  if (!isRecord(json)) throw malformed('the body is not a JSON object');
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length === 0) throw malformed('choices is missing or empty');
  const choice: unknown = choices[0];
  if (!isRecord(choice) || !isRecord(choice.message)) throw malformed('choices[0].message is missing');
  const message = choice.message;

  const toolCalls: unknown[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) throw malformed('choices[0].message.tool_calls is not an array');
    toolCalls.push(...(message.tool_calls as unknown[]));
  }
  // The legacy single function call is a tool call too.
  if (isRecord(message.function_call)) toolCalls.push({ type: 'function', function: message.function_call });

  const text = messageText(message);
  if (text === null && toolCalls.length === 0) throw malformed('choices[0].message has neither content nor tool calls');

  const usage = isRecord(json.usage)
    ? { input_tokens: tokenCount(json.usage.prompt_tokens), output_tokens: tokenCount(json.usage.completion_tokens) }
    : null;
  return {
    content: text ?? '',
    tool_calls: toolCalls,
    finish_reason: optionalString(choice.finish_reason) ?? 'unknown',
    usage,
    model: optionalString(json.model),
  };
}

export async function callOpenAiCompatible(
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
): Promise<TypedInferenceResponse> {
  const json = await postJson(
    { url: `${config.baseUrl}/chat/completions`, headers: openAiChatHeaders(config), body: openAiChatBody(request), secret: config.apiKey },
    signal,
  );
  return parseOpenAiChatResponse(json);
}

import { normalizeFinish, type FinishReason } from '../../shared/provider/finish-reasons.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/provider/inference-types.js';
import { explainHttpStatus } from './http-failure-explanations.js';
import { ProviderError } from './provider-error.js';
import { postJson } from './provider-http.js';
import { noteUnrecognisedFinish, reportedError, type AnswerContext } from './reported-error.js';
import { isRecord, optionalString, tokenCount } from './response-fields.js';

// Anthropic Messages API: the system text travels in `system`, the user messages in `messages`.
// https://platform.claude.com/docs/en/api/messages

export const ANTHROPIC_VERSION = '2023-06-01';

export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  system?: string;
  messages: { role: 'user'; content: string }[];
}

/** The exact body sent; no `tools`. */
export function anthropicMessagesBody(request: TypedInferenceRequest): AnthropicMessagesBody {
  const system = request.conversation.filter((m) => m.role === 'system').map((m) => m.content);
  const body: AnthropicMessagesBody = {
    model: request.options.model,
    max_tokens: request.options.max_tokens,
    messages: request.conversation.filter((m) => m.role === 'user').map((m) => ({ role: 'user', content: m.content })),
  };
  if (system.length > 0) body.system = system.join('\n\n');
  return body;
}

/** The request headers: JSON both ways, the key and the API version Anthropic requires. */
export function anthropicMessagesHeaders(config: ProviderConfig): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    Accept: 'application/json',
    'x-api-key': config.apiKey,
    'anthropic-version': ANTHROPIC_VERSION,
  };
}

function malformed(detail: string): ProviderError {
  return new ProviderError(`the provider response is not an Anthropic message: ${detail}`, 'malformed');
}

/** Translates a Messages JSON answer into the typed response; tool-use blocks become tool calls. */
export function parseAnthropicMessagesResponse(json: unknown, context: AnswerContext = {}): TypedInferenceResponse {
  if (!isRecord(json)) throw malformed('the body is not a JSON object');
  if (json.type === 'error') throw reportedError(json, 'in the answer', context);
  if (!Array.isArray(json.content)) throw malformed('content is missing or not an array');

  let text = '';
  const toolCalls: unknown[] = [];
  for (const block of json.content as unknown[]) {
    if (!isRecord(block) || typeof block.type !== 'string') throw malformed('a content block has no type');
    if (block.type === 'text') {
      if (typeof block.text !== 'string') throw malformed('a text block has no text');
      text += block.text;
    } else if (block.type.endsWith('tool_use')) {
      // tool_use, server_tool_use, mcp_tool_use: all are proposals to act, withheld by the caller.
      toolCalls.push(block);
    }
    // Other blocks (thinking and the like) carry no answer text.
  }

  const usage = isRecord(json.usage) ? { input_tokens: tokenCount(json.usage.input_tokens), output_tokens: tokenCount(json.usage.output_tokens) } : null;
  const normalized = normalizeFinish('anthropic-messages', json.stop_reason);
  noteUnrecognisedFinish(normalized, context);
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

/** One POST to the endpoint and its answer as the typed response; provider-chosen text for the operator goes to `operatorNotes`. */
export async function callAnthropicMessages(
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  operatorNotes?: Pick<string[], 'push'>,
): Promise<TypedInferenceResponse> {
  const url = `${config.baseUrl}/v1/messages`;
  const answer = await postJson(
    {
      url,
      headers: anthropicMessagesHeaders(config),
      body: anthropicMessagesBody(request),
      secret: config.apiKey,
      proxy: config.proxy,
      explainStatus: (status) => explainHttpStatus(status, config),
    },
    signal,
  );
  return parseAnthropicMessagesResponse(answer.json, {
    url,
    requestId: answer.requestId,
    secret: config.apiKey,
    ...(operatorNotes !== undefined ? { operatorNotes } : {}),
  });
}

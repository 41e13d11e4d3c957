import { MAX_OUTPUT_TOKENS } from '../../shared/limits.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import { PROVIDERS, type WireFormat } from '../../shared/provider/provider-kinds.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/provider/inference-types.js';
import { callAnthropicMessages } from './anthropic-messages.js';
import { callOpenAiChat } from './openai-chat.js';
import { ProviderError } from './provider-error.js';
import { wellFormedResponse } from './well-formed-response.js';

/** One POST in a wire format and its answer as the typed response (a wire module's entry point). */
type WireCall = (
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  operatorNotes?: Pick<string[], 'push'>,
) => Promise<TypedInferenceResponse>;

// The wire module of each wire format: a wire format without one does not compile.
const WIRE_CALLS = {
  'openai-chat': callOpenAiChat,
  'anthropic-messages': callAnthropicMessages,
} satisfies Record<WireFormat, WireCall>;

/**
 * Sends one typed request to the configured provider and returns its typed response.
 * One attempt (inference-attempts.ts retries). Aborting `signal` closes the HTTP connection and rejects with kind 'aborted'.
 * Every failure is a ProviderError whose message never contains the API key. Provider-chosen text the
 * operator may want (an unrecognised finish reason) is pushed to `operatorNotes`, for standard error only.
 */
export async function callProvider(
  config: ProviderConfig,
  request: TypedInferenceRequest,
  signal: AbortSignal,
  operatorNotes?: Pick<string[], 'push'>,
): Promise<TypedInferenceResponse> {
  if (request.options.provider !== config.kind) {
    throw new ProviderError(`the typed request names provider ${request.options.provider} but the configured provider is ${config.kind}`, 'malformed');
  }
  // The specification caps the output at 4,096 tokens; configuration can only lower it.
  const limit = request.options.max_tokens;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_OUTPUT_TOKENS) {
    throw new ProviderError(`the typed request asks for ${limit} output tokens; the limit is 1 to ${MAX_OUTPUT_TOKENS}`, 'malformed');
  }
  // Validated at configuration time too; checked again so the HTTP client never sees a key it would refuse.
  if (config.apiKey !== '' && !/^[\x21-\x7e]+$/.test(config.apiKey)) {
    throw new ProviderError('the provider API key contains characters not allowed in an HTTP header', 'network');
  }
  return wellFormedResponse(await WIRE_CALLS[PROVIDERS[config.kind].wire](config, request, signal, operatorNotes));
}

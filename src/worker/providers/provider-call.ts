import { MAX_OUTPUT_TOKENS } from '../../shared/limits.js';
import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import type { TypedInferenceRequest, TypedInferenceResponse } from '../../shared/provider/inference-types.js';
import { ProviderError } from './provider-error.js';
import { wellFormedResponse } from './well-formed-response.js';
import { callWire } from './wire-call.js';

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
  return wellFormedResponse(await callWire(config, request, signal, operatorNotes));
}

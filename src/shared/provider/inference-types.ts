import type { FinishReason } from './finish-reasons.js';
import type { ProviderKind } from './provider-kinds.js';

// The typed request and response that the journal hashes (as canonical JSON) and the providers translate.

export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

export interface TypedInferenceRequest {
  conversation: ChatMessage[];
  options: { provider: ProviderKind; model: string; max_tokens: number };
}

export interface TypedInferenceUsage {
  input_tokens: number | null;
  output_tokens: number | null;
}

export interface TypedInferenceResponse {
  content: string;
  /** Tool calls the model proposed, as the provider sent them; the caller withholds any response that has one. */
  tool_calls: unknown[];
  /** The provider-neutral finish reason (see finish-reasons.ts); only `complete` is ever released. */
  finish_reason: FinishReason;
  /** The provider's own finish value when the finish table names it (finish-reasons.ts), else null. */
  provider_finish_reason: string | null;
  usage: TypedInferenceUsage | null;
  model: string | null;
  /** Set when the provider's strings held unpaired surrogates, replaced with U+FFFD (well-formed-response.ts): never released. */
  not_well_formed?: true;
}

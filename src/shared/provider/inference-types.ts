import type { ProviderKind } from './provider-kinds.js';
import type { ChatMessage } from './wire-format.js';

// The typed request and response that the journal hashes (as canonical JSON) and the wire formats
// translate. The response, the shape every wire format's parser yields, is declared with them (wire-format.ts).

export type { ChatMessage, TypedInferenceResponse, TypedInferenceUsage } from './wire-format.js';

export interface TypedInferenceRequest {
  conversation: ChatMessage[];
  options: { provider: ProviderKind; model: string; max_tokens: number };
}

import { canonicalJson } from '../shared/canonical-json.js';
import type { SymbiontFinishReason, Usage } from '../shared/journal/journal-records.js';
import type { FinishReason } from '../shared/provider/finish-reasons.js';
import type { TypedInferenceResponse } from '../shared/provider/inference-types.js';

// A provider's answer in the shape of Symbiont's `InferenceResponse` (inference.rs at
// jaschadub/Symbiont 3afac162d7a12eaabc4b6c2a0b7f2b5745b27190): what the journal's response hash
// covers, so an auditor holding the exact response computes the same hash for either implementation
// (docs/audit.md, "Hashes").

/** Symbiont's `ToolCallRequest`. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
}

export interface SymbiontResponse {
  content: string;
  tool_calls: ToolCallRequest[];
  /** Symbiont's finish reason; null where our vocabulary has a value Symbiont's does not (`error`, `unknown`). */
  finish_reason: SymbiontFinishReason | null;
  usage: Usage;
  model: string;
}

const FINISH: Record<FinishReason, SymbiontFinishReason | null> = {
  complete: 'stop',
  truncated: 'max_tokens',
  refused: 'refusal',
  filtered: 'content_filter',
  tool_use: 'tool_calls',
  error: null,
  unknown: null,
};

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** One proposed tool call as Symbiont keeps it: OpenAI's `{id, function: {name, arguments}}` or Anthropic's `{id, name, input}`. */
function toolCallRequest(raw: unknown): ToolCallRequest {
  const call = (raw ?? {}) as { id?: unknown; name?: unknown; input?: unknown; function?: { name?: unknown; arguments?: unknown } };
  if (call.function !== undefined && call.function !== null) {
    const args = call.function.arguments;
    return { id: text(call.id), name: text(call.function.name), arguments: typeof args === 'string' ? args : canonicalJson(args ?? {}) };
  }
  return { id: text(call.id), name: text(call.name), arguments: canonicalJson(call.input ?? {}) };
}

export function symbiontResponse(response: TypedInferenceResponse): SymbiontResponse {
  // Each count is at most 2^32-1 (wire-format.ts, tokenCount); so is the total, Symbiont's u32 too.
  const prompt = response.usage?.input_tokens ?? 0;
  const completion = response.usage?.output_tokens ?? 0;
  return {
    content: response.content,
    tool_calls: response.tool_calls.map(toolCallRequest),
    finish_reason: FINISH[response.finish_reason],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Math.min(prompt + completion, 0xffff_ffff) },
    model: response.model ?? '',
  };
}

import type { TypedInferenceResponse } from '../../shared/provider/inference-types.js';

// Provider text enters the run here, and from here on it is well-formed Unicode. JSON can spell an
// unpaired UTF-16 surrogate ("a \ud800 b"), which no UTF-8 reader can hold: serde_json refuses the
// escape, and so does `audit inspect`, so a journal that kept it would fail verification. Each one
// is replaced with U+FFFD in every string of the answer (its text, its tool calls at any depth, the
// model name); the answer is then marked, and the run records its hashes but withholds it as
// malformed (invocation.ts): a changed answer is never released.

/** `value` with every unpaired surrogate in its strings (object keys included) replaced by U+FFFD, and whether any was. */
function wellFormed(value: unknown, replaced: { any: boolean }): unknown {
  if (typeof value === 'string') {
    if (value.isWellFormed()) return value;
    replaced.any = true;
    return value.toWellFormed();
  }
  if (Array.isArray(value)) return value.map((item) => wellFormed(item, replaced));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [wellFormed(key, replaced) as string, wellFormed(item, replaced)]));
  }
  return value;
}

/** The answer with every string well-formed; `not_well_formed` set when anything had to be replaced. */
export function wellFormedResponse(response: TypedInferenceResponse): TypedInferenceResponse {
  const replaced = { any: false };
  const content = wellFormed(response.content, replaced) as string;
  const toolCalls = response.tool_calls.map((call) => wellFormed(call, replaced));
  const model = response.model === null ? null : (wellFormed(response.model, replaced) as string);
  if (!replaced.any) return response;
  return { ...response, content, tool_calls: toolCalls, model, not_well_formed: true };
}

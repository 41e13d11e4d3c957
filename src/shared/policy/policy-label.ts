import { cedar } from './cedar-engine.js';
import { lineColumnOfByteOffset } from './cedar-statements.js';
import type { ParsedPolicy } from './policy-file-parse.js';

// The one name a policy has wherever it is shown (the client's error for a denied call, the
// policy.denied and run.ended lines, `symbi check`, `symbi policy validate` and `symbi policy
// test`): its `@id("...")` annotation, the name its author gave it, else where it starts
// (file:line). The journal's determining_policies keep Cedar's own policy ids
// ("policies/a.cedar#0"): the record format is not ours.

/** The @id annotation of `text` (one static Cedar policy), if it has one. */
function annotatedPolicyId(text: string): string | undefined {
  try {
    const answer = cedar.policyToJson(text);
    if (answer.type !== 'success') return undefined;
    const id = (answer.json as { annotations?: Record<string, unknown> }).annotations?.id;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** `@id` when the policy has one; else `file:line` for a Cedar file (`line` where it starts), or the policy's id for a JSON-form entry. */
export function policyLabel(policy: ParsedPolicy, line = policyStartLine(policy)): string {
  const id = annotatedPolicyId(policy.text);
  if (id !== undefined) return id;
  // A JSON-form entry's text is its own source: its id (file#name) says where it is.
  if (policy.origin.label !== '') return policy.id;
  return `${policy.file}:${line}`;
}

/** Line of the policy's first character (its annotations included) in its file, or in a JSON entry's source. */
export function policyStartLine(policy: ParsedPolicy): number {
  return lineColumnOfByteOffset(policy.origin.source, policy.origin.byteBase).line;
}

/** The labels of policies named by Cedar id, looked up in a loaded set (an id not in it is shown as is). */
export function policyLabelsOf(set: { readonly policies: readonly { readonly id: string; readonly label: string }[] }, ids: readonly string[]): string[] {
  return ids.map((id) => set.policies.find((policy) => policy.id === id)?.label ?? id);
}

import { cedar } from './cedar-engine.js';
import type { ParsedPolicy } from './policy-file-parse.js';

// How a policy is named to an operator (the run.ended and policy.denied lines): by its
// `@id("...")` annotation, the name its author gave it, else by where it starts (file:line).
// The journal keeps Cedar's own policy ids ("policies/a.cedar#0"): the record format is not ours.

/** The @id annotation of `text` (one static Cedar policy), if it has one. */
export function annotatedPolicyId(text: string): string | undefined {
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
export function policyLabel(policy: ParsedPolicy, line: number): string {
  const id = annotatedPolicyId(policy.text);
  if (id !== undefined) return id;
  // A JSON-form entry's text is its own source: its id (file#name) says where it is.
  if (policy.origin.label !== '') return policy.id;
  return `${policy.file}:${line}`;
}

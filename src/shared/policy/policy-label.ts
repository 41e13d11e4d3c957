import { cedar } from './cedar-engine.js';
import type { ParsedPolicy } from './policy-file-parse.js';

// How a policy is named to an operator (the run.ended and policy.denied lines): by its
// `@id("...")` annotation, the name its author gave it, else by where it starts (file:line).
// The journal keeps Cedar's own policy ids ("policies/a.cedar#0"): the record format is not ours.

/** The @id annotation of `text` (one static Cedar policy), if it has one. */
function annotatedId(text: string): string | undefined {
  try {
    const answer = cedar.policyToJson(text);
    if (answer.type !== 'success') return undefined;
    const id = (answer.json as { annotations?: Record<string, unknown> }).annotations?.id;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** `@id` when the policy has one; else `file:line` for a Cedar file, or the policy's id for a JSON-form entry. */
export function policyLabel(policy: ParsedPolicy): string {
  const id = annotatedId(policy.text);
  if (id !== undefined) return id;
  const { source, byteBase, label } = policy.origin;
  // A JSON-form entry's text is its own source: its id (file#name) says where it is.
  if (label !== '') return policy.id;
  const before = Buffer.from(source, 'utf8').subarray(0, byteBase).toString('utf8');
  return `${policy.file}:${before.split('\n').length}`;
}

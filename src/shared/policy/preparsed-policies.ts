// Per-thread cache of policy sets parsed once inside the wasm module, so a decision does not
// re-parse them (statefulIsAuthorized). The wasm cache is thread-local,
// and so is this module's state. Sets are keyed by a hash of their ids and texts, because a
// set that crossed a thread boundary arrives as a fresh copy; a bounded number of slots is
// reused so a long-lived process never grows the wasm cache without limit.
import { sha256Hex } from '../canonical-json.js';
import { cedar } from './cedar-engine.js';
import { describeCedarErrors } from './cedar-diagnostics.js';

const SLOT_COUNT = 16; // distinct policy sets kept parsed per thread; a process normally has one

const slotOfKey = new Map<string, string>(); // insertion order = least recently used first
const freeSlots: string[] = Array.from({ length: SLOT_COUNT }, (_, i) => `symbi-policy-set-${i}`);

type PolicyList = readonly { id: string; text: string }[];
const keyOfFrozenList = new WeakMap<PolicyList, string>();

/**
 * A hash of the policies' ids and texts. A frozen list (what loadPolicySet returns) cannot
 * change, so its key is remembered; any other list is hashed on every call.
 */
function policySetKey(policies: PolicyList): string {
  const frozen = Object.isFrozen(policies) && policies.every((policy) => Object.isFrozen(policy));
  if (frozen) {
    const known = keyOfFrozenList.get(policies);
    if (known !== undefined) return known;
  }
  const key = sha256Hex(JSON.stringify(policies.map((policy) => [policy.id, policy.text])));
  if (frozen) keyOfFrozenList.set(policies, key);
  return key;
}

/** The wasm-side id of this set of policies, parsing it into a slot if needed. */
export function preparedPolicySetId(policies: PolicyList): string {
  const key = policySetKey(policies);
  const existing = slotOfKey.get(key);
  if (existing !== undefined) {
    slotOfKey.delete(key);
    slotOfKey.set(key, existing);
    return existing;
  }
  let slot = freeSlots.pop();
  if (slot === undefined) {
    const [oldestKey, oldestSlot] = slotOfKey.entries().next().value as [string, string];
    slotOfKey.delete(oldestKey);
    slot = oldestSlot;
  }
  const staticPolicies: Record<string, string> = {};
  for (const policy of policies) staticPolicies[policy.id] = policy.text;
  const answer = cedar.preparsePolicySet(slot, { staticPolicies });
  if (answer.type === 'failure') {
    freeSlots.push(slot);
    throw new Error(`the policy set does not parse: ${describeCedarErrors(answer.errors)}`);
  }
  slotOfKey.set(key, slot);
  return slot;
}

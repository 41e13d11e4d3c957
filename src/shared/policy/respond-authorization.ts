// Decides Action::"respond": after inference on the exact response, and before inference
// on whether any response could be permitted at all.
//
// The pre-inference check uses Cedar's own partial evaluation (isAuthorizedPartial, which
// the Node.js wasm build includes) with `context.response` marked unknown. Cedar answers
// "deny" only when the known parts already decide it: a forbid that holds whatever the
// response is, or no permit that could still hold. Any permit whose outcome depends on the
// response stays a residual and the answer is "possible"; the exact response is judged later.
// `context.run_id` is unknown too: before inference the run has no id yet, and with it
// unknown the verdict depends only on the policy set and the agent (agent-refusal.ts keeps it).
import { cedar } from './cedar-engine.js';
import { foldToOneLine } from '../text/one-line-text.js';
import { describeCedarErrors } from './cedar-diagnostics.js';
import type { LoadedPolicySet } from './policy-set.js';
import { policyLabelsOf } from './policy-label.js';
import { preparedPolicySetId } from './preparsed-policies.js';
import {
  ACTION_UID,
  RESOURCE_UID,
  cedarRequestParts,
  cedarResponse,
  InvalidRespondRequest,
  respondRequestFor,
  type RespondRequest,
  type RespondRequestWithoutResponse,
} from './respond-request.js';

export type { RespondRequest, RespondRequestWithoutResponse } from './respond-request.js';

export interface RespondDecision {
  decision: 'allow' | 'deny';
  determining_policies: string[];
  errors: string[];
  reason: string;
}

const DEFAULT_PERMIT_REASON = 'no policy files: the default permission for respond applies';
const UNKNOWN_RESPONSE = { __extn: { fn: 'unknown', arg: 'context.response' } };
const UNKNOWN_RUN_ID = { __extn: { fn: 'unknown', arg: 'context.run_id' } };

export interface PermitPossibility {
  possible: boolean;
  reason: string;
}

/**
 * Readies a thread for its first run: parses the set into Cedar, then makes one
 * decision and one partial evaluation on a made-up request (nothing is cached from them), because
 * Cedar's wasm functions are compiled on their first call. Called when a worker thread starts and
 * by the supervisor once the client has initialized. Problems are left for the real calls to report.
 */
export function preparePolicySet(set: LoadedPolicySet): void {
  if (set.mode !== 'configured') return;
  try {
    preparedPolicySetId(set.policies);
    const request = respondRequestFor(WARM_UP_AGENT, WARM_UP_AGENT.principal, {
      content: '',
      sha256: WARM_UP_AGENT.sourceHash,
      bytes: 0,
      finish_reason: 'complete',
      provider_finish_reason: '',
    });
    authorizeRespond(set, request);
    const parts = cedarRequestParts(request);
    partialVerdict(set, parts, { ...parts.baseContext, run_id: UNKNOWN_RUN_ID, response: UNKNOWN_RESPONSE }, WARM_UP_AGENT.declaredName);
  } catch {
    // the real calls deny with the reason when they meet the same problem
  }
}

/** A made-up agent for preparePolicySet; its principal, the nil UUID, is no registered agent's. */
const WARM_UP_AGENT = {
  principal: '00000000-0000-0000-0000-000000000000',
  declaredName: 'warm-up',
  file: 'agents/warm-up',
  sourceHash: '0'.repeat(64),
  declarationHash: '0'.repeat(64),
  capabilities: [],
};

export function authorizeRespond(set: LoadedPolicySet, request: RespondRequest): RespondDecision {
  const deny = (reason: string, errors: string[] = []): RespondDecision => ({ decision: 'deny', determining_policies: [], errors, reason });
  let parts;
  let response;
  try {
    parts = cedarRequestParts(request);
    response = cedarResponse(request.context?.response);
  } catch (error) {
    return deny(`invalid respond request: ${messageOf(error)}`);
  }
  if (set.mode === 'default-permit') return { decision: 'allow', determining_policies: [], errors: [], reason: DEFAULT_PERMIT_REASON };
  if (set.mode !== 'configured') return deny(denyAllReason(set));

  let answer;
  try {
    // No schema at decision time. The set was validated against the respond schema when it was
    // loaded (respond-validation.ts), and cedarRequestParts and cedarResponse build exactly the
    // schema's entity and context, refusing anything else: Cedar checking the request against
    // the schema again would repeat that, at a large part of each decision's cost (measured in
    // docs/benchmarks.md, "Governance cost, third round: each change side by side").
    // test/unit/policy-authorization.test.ts checks that every request built here passes that check.
    answer = cedar.statefulIsAuthorized({
      principal: parts.principal,
      action: ACTION_UID,
      resource: RESOURCE_UID,
      context: { ...parts.baseContext, response },
      preparsedPolicySetId: preparedPolicySetId(set.policies),
      entities: parts.entities,
    });
  } catch (error) {
    return deny(`Cedar could not evaluate the request: ${messageOf(error)}`);
  }
  if (answer.type === 'failure') return deny(`Cedar could not evaluate the request: ${describeCedarErrors(answer.errors)}`);
  const { decision, diagnostics } = answer.response;
  const determining = [...diagnostics.reason];
  // The reason, which the client and stderr read, names policies by label (policy-label.ts);
  // determining_policies and errors keep Cedar's ids, as the journal records them.
  const named = (ids: readonly string[]): string => policyLabelsOf(set, ids).join(', ');
  const errors = diagnostics.errors.map((item) => `${item.policyId}: ${foldToOneLine(item.error.message)}`);
  if (errors.length > 0) {
    const shown = diagnostics.errors.map((item) => `${named([item.policyId])}: ${foldToOneLine(item.error.message)}`);
    // Cedar skips a policy whose evaluation errors, so its "allow" may stand only because a
    // forbid could not be judged. A decision any policy failed to evaluate is a deny.
    const failed = [...new Set(diagnostics.errors.map((item) => item.policyId))];
    return {
      decision: 'deny',
      determining_policies: failed,
      errors,
      reason: `a policy could not be evaluated, so the response is denied: ${shown.join('; ')}`,
    };
  }
  if (decision === 'allow') {
    return { decision, determining_policies: determining, errors, reason: `permitted by ${named(determining)}` };
  }
  const reason = determining.length > 0 ? `forbidden by ${named(determining)}` : 'no permit policy applies';
  return { decision: 'deny', determining_policies: determining, errors, reason };
}

/** Before inference: could any response at all be permitted for this agent? */
export function canPermitSomeResponse(set: LoadedPolicySet, request: RespondRequestWithoutResponse): PermitPossibility {
  let parts;
  try {
    parts = cedarRequestParts(request);
  } catch (error) {
    return { possible: false, reason: `invalid respond request: ${messageOf(error)}` };
  }
  if (set.mode === 'default-permit') return { possible: true, reason: DEFAULT_PERMIT_REASON };
  if (set.mode !== 'configured') return { possible: false, reason: denyAllReason(set) };

  const context = { ...parts.baseContext, run_id: UNKNOWN_RUN_ID, response: UNKNOWN_RESPONSE };
  return partialVerdict(set, parts, context, request.agentName);
}

function partialVerdict(
  set: LoadedPolicySet,
  parts: ReturnType<typeof cedarRequestParts>,
  context: Record<string, unknown>,
  agentName: string,
): PermitPossibility {
  const staticPolicies: Record<string, string> = {};
  for (const policy of set.policies) staticPolicies[policy.id] = policy.text;
  let answer;
  try {
    // No schema here: request validation rejects a context holding an unknown value.
    answer = cedar.isAuthorizedPartial({
      principal: parts.principal,
      action: ACTION_UID,
      resource: RESOURCE_UID,
      context: context as Parameters<typeof cedar.isAuthorizedPartial>[0]['context'],
      policies: { staticPolicies },
      entities: parts.entities,
    });
  } catch (error) {
    return unsure(messageOf(error));
  }
  if (answer.type === 'failure') return unsure(describeCedarErrors(answer.errors));
  const residual = answer.response;
  if (residual.decision !== 'deny') {
    if (residual.decision === 'allow')
      return { possible: true, reason: `permitted whatever the response, by ${policyLabelsOf(set, residual.mustBeDetermining).join(', ')}` };
    return { possible: true, reason: `depends on the response (${policyLabelsOf(set, residual.nontrivialResiduals).join(', ')})` };
  }
  const forbids = residual.satisfied.filter((id) => residual.residuals[id]?.effect === 'forbid');
  if (forbids.length > 0) return { possible: false, reason: `every response is forbidden by ${policyLabelsOf(set, forbids).join(', ')}` };
  return { possible: false, reason: `no permit policy can apply to agent ${JSON.stringify(agentName)} (principal ${parts.principal.id})` };
}

function denyAllReason(set: LoadedPolicySet): string {
  return `deny-all policy set: ${set.denyReason ?? 'the configured policy set is unusable'}`;
}

/** Partial evaluation could not run; say "possible" and let the exact response decide. */
function unsure(why: string): PermitPossibility {
  return { possible: true, reason: `partial evaluation failed (${why}); the exact response will be judged` };
}

function messageOf(error: unknown): string {
  if (error instanceof InvalidRespondRequest) return error.message;
  return foldToOneLine(error instanceof Error ? error.message : String(error));
}

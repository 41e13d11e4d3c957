import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { loadPolicySet, type LoadedPolicySet } from '../../src/shared/policy/policy-set.js';
import {
  authorizeRespond,
  canPermitSomeResponse,
  type RespondRequest,
  type RespondRequestWithoutResponse,
} from '../../src/shared/policy/respond-authorization.js';
import { cedar } from '../../src/shared/policy/cedar-engine.js';
import { ACTION_UID, RESOURCE_UID, cedarRequestParts, cedarResponse } from '../../src/shared/policy/respond-request.js';
import { RESPOND_SCHEMA_TEXT } from '../../src/shared/policy/respond-schema.js';
import { repoRoot as repo } from '../support/server-entry.js';

const example = (name: string): string => fs.readFileSync(path.join(repo, 'policies', 'examples', name), 'utf8');

const PERMIT = 'permit(principal, action == Action::"respond", resource);';
const SECRET_FORBID = 'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };';

function before(agent = 'declared', capabilities: string[] = ['read']): RespondRequestWithoutResponse {
  return {
    principal: responsePrincipal(agent),
    agentName: agent,
    capabilities,
    context: {
      surface: 'mcp-server',
      mode: 'text_response',
      tools_enabled: false,
      run_id: '7d1f6f39-3a4c-4b55-9a43-0d2a2f1f9c11',
      agent: { name: agent, file: `agents/${agent}.symbi`, source_hash: 'a'.repeat(64), declaration_hash: 'b'.repeat(64), capabilities },
    },
  };
}

function withResponse(base: RespondRequestWithoutResponse, content: string, finishReason = 'complete'): RespondRequest {
  return {
    ...base,
    context: {
      ...base.context,
      response: {
        content,
        sha256: createHash('sha256').update(content).digest('hex'),
        bytes: Buffer.byteLength(content, 'utf8'),
        finish_reason: finishReason,
        provider_finish_reason: 'stop',
      },
    },
  };
}

const request = (content: string, agent?: string, capabilities?: string[]): RespondRequest => withResponse(before(agent, capabilities), content);
const load = (...texts: string[]): LoadedPolicySet => loadPolicySet(texts.map((text, i) => ({ path: `policies/p${i}.cedar`, text })));

describe('authorizeRespond', () => {
  it('default permission when there are no policy files', () => {
    const decision = authorizeRespond(loadPolicySet([]), request('anything, even a secret'));
    assert.equal(decision.decision, 'allow');
    assert.deepEqual(decision.determining_policies, []);
    assert.match(decision.reason, /default permission/);
  });

  it('deny-all denies every response and names the file', () => {
    const set = loadPolicySet([{ path: 'policies/broken.cedar', text: 'permit(principal,' }]);
    const decision = authorizeRespond(set, request('hello'));
    assert.equal(decision.decision, 'deny');
    assert.match(decision.reason, /policies\/broken\.cedar/);
    const verdict = canPermitSomeResponse(set, before());
    assert.equal(verdict.possible, false);
    assert.match(verdict.reason, /policies\/broken\.cedar/);
  });

  it('forbid on context.response.content like "*secret*": benign text allowed, secret text denied', () => {
    const set = loadPolicySet([
      { path: 'policies/permit.cedar', text: example('permit-respond.cedar') },
      { path: 'policies/mcp-server/forbid.cedar', text: example('forbid-secret-content.cedar') },
    ]);
    const allowed = authorizeRespond(set, request('Here is a summary of the file.'));
    assert.deepEqual(allowed, { decision: 'allow', determining_policies: ['policies/permit.cedar#0'], errors: [], reason: 'permitted by permit-respond' });
    const denied = authorizeRespond(set, request('The password is in the secret vault.'));
    assert.equal(denied.decision, 'deny');
    assert.deepEqual(denied.determining_policies, ['policies/mcp-server/forbid.cedar#0']);
    assert.match(denied.reason, /forbidden by forbid-secret-content$/);
  });

  it('the decision follows the content exactly (property: denied iff the text contains "secret")', () => {
    const set = load(PERMIT, SECRET_FORBID);
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.boolean(), (noise, plant) => {
        const content = plant ? `${noise}secret${noise}` : noise;
        const decision = authorizeRespond(set, request(content));
        assert.equal(decision.decision, content.includes('secret') ? 'deny' : 'allow');
      }),
      { numRuns: 200 },
    );
  });

  it('like patterns are case-sensitive, as the README says', () => {
    const set = load(PERMIT, SECRET_FORBID);
    assert.equal(authorizeRespond(set, request('TOP SECRET')).decision, 'allow');
    assert.equal(authorizeRespond(set, request('top secret')).decision, 'deny');
  });

  it('a large response (4 MiB) is judged on its full text', () => {
    const set = load(PERMIT, SECRET_FORBID);
    const big = 'x'.repeat(4 * 1024 * 1024 - 6);
    assert.equal(authorizeRespond(set, request(big)).decision, 'allow');
    assert.equal(authorizeRespond(set, request(`${big}secret`)).decision, 'deny');
  });

  it('a permit restricted to one principal applies to that agent only', () => {
    const set = load(`permit(principal == Agent::"${responsePrincipal('declared')}", action == Action::"respond", resource);`);
    assert.equal(authorizeRespond(set, request('hi', 'declared')).decision, 'allow');
    const other = authorizeRespond(set, request('hi', 'other'));
    assert.equal(other.decision, 'deny');
    assert.match(other.reason, /no permit policy applies/);
  });

  it('the example capability policy: only agents declaring "summarize", complete answers up to 16 KiB', () => {
    const set = load(example('restrict-by-capability.cedar'));
    assert.deepEqual(set.warnings, []);
    assert.equal(authorizeRespond(set, request('ok', 'writer', ['summarize'])).decision, 'allow');
    assert.equal(authorizeRespond(set, request('ok', 'reader', ['read'])).decision, 'deny');
    assert.equal(authorizeRespond(set, withResponse(before('writer', ['summarize']), 'cut off', 'length')).decision, 'deny');
    assert.equal(authorizeRespond(set, request('y'.repeat(16385), 'writer', ['summarize'])).decision, 'deny');
  });

  it('principal attributes name and capabilities are the entity attributes', () => {
    const set = load('permit(principal, action, resource) when { principal.name == "declared" && principal.capabilities.contains("read") };');
    assert.equal(authorizeRespond(set, request('hi', 'declared', ['read'])).decision, 'allow');
    assert.equal(authorizeRespond(set, request('hi', 'declared', ['write'])).decision, 'deny');
  });

  it('every context field carries its value', () => {
    const conditions = [
      'context.surface == "mcp-server"',
      'context.mode == "text_response"',
      'context.tools_enabled == false',
      'context.run_id == "7d1f6f39-3a4c-4b55-9a43-0d2a2f1f9c11"',
      'context.agent.name == "declared"',
      'context.agent.file == "agents/declared.symbi"',
      `context.agent.source_hash == "${'a'.repeat(64)}"`,
      `context.agent.declaration_hash == "${'b'.repeat(64)}"`,
      'context.agent.capabilities == ["read"]',
      'context.response.content == "héllo"',
      `context.response.sha256 == "${createHash('sha256').update('héllo').digest('hex')}"`,
      'context.response.bytes == 6',
      'context.response.finish_reason == "complete"',
    ];
    const set = load(`permit(principal, action, resource) when { ${conditions.join(' && ')} };`);
    assert.deepEqual(set.warnings, []);
    assert.equal(authorizeRespond(set, request('héllo')).decision, 'allow');
  });
});

describe('the request Cedar decides on, without a schema at decision time', () => {
  // authorizeRespond leaves the schema out of each decision (respond-authorization.ts says why):
  // that is only sound if every request it builds is one the schema accepts, and if Cedar then
  // decides exactly as it would with the schema. Both are checked here with Cedar itself.
  const EVERY_FIELD = `permit (principal is Agent, action == Action::"respond", resource == Resource::"default") when {
    (principal.name like "*a*" && principal.capabilities.contains("read")) ||
    (context.response.bytes > 12 && context.response.content like "*e*" && context.response.sha256 != "") ||
    (context.agent.file like "agents/*" && context.agent.capabilities.containsAny(["write", "x"]) && context.run_id != "" &&
     context.agent.source_hash != context.agent.declaration_hash && context.agent.name != "b") ||
    (context.surface == "mcp-server" && context.mode == "text_response" && !context.tools_enabled &&
     context.response.finish_reason == "complete" && context.response.provider_finish_reason == "stop" && context.response.bytes == 3)
  };`;
  const set = load(EVERY_FIELD);

  it("every request built for a decision passes Cedar's request validation against the respond schema, and decides the same (property)", () => {
    const words = fc.string({ unit: 'grapheme', maxLength: 24 });
    fc.assert(
      fc.property(
        words,
        fc.array(fc.constantFrom('read', 'write', 'x', 'summarize', ''), { maxLength: 4 }),
        words,
        fc.constantFrom('complete', 'length', 'content_filter'),
        (agent, capabilities, content, finishReason) => {
          const built = withResponse(before(agent, capabilities), content, finishReason);
          const parts = cedarRequestParts(built);
          const checked = cedar.isAuthorized({
            principal: parts.principal,
            action: ACTION_UID,
            resource: RESOURCE_UID,
            context: { ...parts.baseContext, response: cedarResponse(built.context.response) },
            entities: parts.entities,
            policies: { staticPolicies: { 'policies/p0.cedar#0': EVERY_FIELD } },
            schema: RESPOND_SCHEMA_TEXT,
            validateRequest: true,
          });
          assert.equal(checked.type, 'success', JSON.stringify(checked));
          assert.ok(checked.type === 'success');
          assert.equal(authorizeRespond(set, built).decision, checked.response.decision);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('canPermitSomeResponse (Cedar partial evaluation, response unknown)', () => {
  it('default permission: possible', () => {
    assert.equal(canPermitSomeResponse(loadPolicySet([]), before()).possible, true);
  });

  it('a forbid on everything: impossible, naming the forbid', () => {
    const verdict = canPermitSomeResponse(load(PERMIT, 'forbid(principal, action, resource);'), before());
    assert.deepEqual(verdict, { possible: false, reason: 'every response is forbidden by policies/p1.cedar:1' });
  });

  it('no permit policy at all (only content forbids): impossible', () => {
    const verdict = canPermitSomeResponse(load(SECRET_FORBID), before());
    assert.equal(verdict.possible, false);
    assert.match(verdict.reason, /no permit policy can apply to agent "declared"/);
  });

  it('a permit for another principal only: impossible for this one', () => {
    const set = load(`permit(principal == Agent::"${responsePrincipal('someone-else')}", action, resource);`);
    assert.equal(canPermitSomeResponse(set, before('declared')).possible, false);
    assert.equal(canPermitSomeResponse(set, before('someone-else')).possible, true);
  });

  it('a content-dependent forbid: still possible', () => {
    const verdict = canPermitSomeResponse(load(PERMIT, SECRET_FORBID), before());
    assert.equal(verdict.possible, true);
    assert.match(verdict.reason, /depends on the response/);
  });

  it('a content-dependent permit: possible', () => {
    const set = load('permit(principal, action, resource) when { context.response.bytes < 100 };');
    assert.equal(canPermitSomeResponse(set, before()).possible, true);
  });

  it('a forbid decided by the agent, not the response: impossible for that agent only', () => {
    const set = load(PERMIT, 'forbid(principal, action, resource) unless { context.agent.capabilities.contains("respond") };');
    assert.equal(canPermitSomeResponse(set, before('a', ['read'])).possible, false);
    assert.equal(canPermitSomeResponse(set, before('b', ['respond'])).possible, true);
  });

  it('a permit whose response part would error still counts as possible (soundness)', () => {
    // Validates, but overflows (an evaluation error) whenever the content has no "a".
    const set = load('permit(principal, action, resource) when { context.response.content like "*a*" || context.response.bytes * 4611686018427387904 > 0 };');
    assert.equal(canPermitSomeResponse(set, before()).possible, true);
    assert.equal(authorizeRespond(set, request('a')).decision, 'allow');
  });

  it('the run id is unknown before inference, so a policy on it never causes a refusal', () => {
    const set = load('permit(principal, action, resource) when { context.run_id == "some-other-run" };');
    assert.equal(canPermitSomeResponse(set, before()).possible, true);
    assert.equal(authorizeRespond(set, request('hello')).decision, 'deny');
  });

  it('a remembered verdict follows changes to a set that is not frozen', () => {
    const copy = structuredClone(load(PERMIT));
    assert.equal(canPermitSomeResponse(copy, before()).possible, true);
    copy.policies.push({
      id: 'policies/late.cedar#0',
      file: 'policies/late.cedar',
      text: 'forbid(principal, action, resource);',
      line: 1,
      label: 'policies/late.cedar:1',
    });
    assert.equal(canPermitSomeResponse(copy, before()).possible, false);
    assert.equal(authorizeRespond(copy, request('hello')).decision, 'deny');
  });

  it("the same agent under two policy sets gets each set's verdict", () => {
    const open = load(PERMIT);
    const closed = load(PERMIT, 'forbid(principal, action, resource) when { principal.name == "declared" };');
    for (let i = 0; i < 3; i += 1) {
      assert.equal(canPermitSomeResponse(open, before()).possible, true);
      assert.equal(canPermitSomeResponse(closed, before()).possible, false);
      assert.equal(canPermitSomeResponse(closed, before('other')).possible, true);
    }
  });

  it('never refuses what the exact evaluation would allow (property over generated policies and texts)', () => {
    const condition = fc.constantFrom(
      'true',
      'false',
      'context.response.content like "*secret*"',
      'context.response.bytes > 5',
      'context.response.finish_reason == "complete"',
      'principal.capabilities.contains("read")',
      'context.agent.name == "declared"',
      'principal.missing',
      'context.response.content == "exact"',
    );
    const policy = fc
      .tuple(fc.constantFrom('permit', 'forbid'), condition, fc.boolean())
      .map(([effect, cond, negate]) => `${effect}(principal, action, resource) ${negate ? 'unless' : 'when'} { ${cond} };`);
    fc.assert(
      fc.property(fc.array(policy, { minLength: 1, maxLength: 4 }), fc.constantFrom('exact', 'a secret', 'short', 'long enough text'), (policies, content) => {
        const set = load(policies.join('\n'));
        const verdict = canPermitSomeResponse(set, before());
        if (!verdict.possible) assert.equal(authorizeRespond(set, request(content)).decision, 'deny', `${policies.join(' ')} / ${content}`);
      }),
      { numRuns: 150 },
    );
  });
});

describe('attacks on the policy rules', () => {
  it('a policy reaching for the response through another attribute never sees it', () => {
    const tries = [
      'permit(principal, action, resource) when { principal.response.content like "*" };',
      'permit(principal, action, resource) when { context.agent has response };',
      'permit(principal, action, resource) when { context has reply };',
      'permit(principal, action, resource) when { resource has content };',
    ];
    for (const text of tries) {
      const set = load(text);
      // An attribute the schema does not name fails validation (deny all); a `has` test
      // on one can never hold (a warning).
      const flagged = set.mode === 'deny-all' ? (set.denyReason ?? '') : (set.warnings[0] ?? '');
      assert.match(flagged, /not found|policy is impossible/, text);
      assert.equal(authorizeRespond(set, request('hello')).decision, 'deny', text);
    }
  });

  it('fields a caller adds to the request are not passed to Cedar', () => {
    const set = load('permit(principal, action, resource) when { context has override || principal has admin };');
    const forged = request('hello') as RespondRequest & { context: { override?: boolean } };
    forged.context.override = true;
    (forged as unknown as { admin: boolean }).admin = true;
    (forged.context.response as unknown as { extra: string }).extra = 'x';
    assert.equal(authorizeRespond(set, forged).decision, 'deny');
  });

  it('forbid always overrides permit, across files and in either order', () => {
    const forbid = 'forbid(principal, action, resource) when { context.response.content like "*drop table*" };';
    for (const files of [
      [PERMIT, forbid],
      [forbid, PERMIT],
    ]) {
      const set = load(...files);
      assert.equal(authorizeRespond(set, request('please drop table users')).decision, 'deny');
      assert.equal(authorizeRespond(set, request('select 1')).decision, 'allow');
    }
  });

  it('a later sound file cannot restore permission after a malformed one', () => {
    const set = loadPolicySet([
      { path: 'policies/bad.cedar', text: 'forbid(principal, action, resource) when { ' },
      { path: 'policies/mcp-server/good.cedar', text: PERMIT },
    ]);
    assert.equal(set.mode, 'deny-all');
    assert.equal(authorizeRespond(set, request('hello')).decision, 'deny');
  });

  it('a policy left in a comment is not active', () => {
    const set = load(`// ${PERMIT}\nforbid(principal, action, resource) when { context.response.bytes > 1000000 };`);
    assert.equal(authorizeRespond(set, request('hello')).decision, 'deny');
  });

  it('a permit for another action does not permit respond', () => {
    const set = load('permit(principal, action == Action::"read", resource);');
    assert.equal(authorizeRespond(set, request('hello')).decision, 'deny');
    assert.equal(canPermitSomeResponse(set, before()).possible, false);
  });

  it('a request that contradicts the fixed route fields is denied, whatever the policy', () => {
    const set = loadPolicySet([]);
    const mutate = (change: (r: RespondRequest) => void): RespondRequest => {
      const copy = structuredClone(request('hello'));
      change(copy);
      return copy;
    };
    const forged: [string, RespondRequest][] = [
      ['tools enabled', mutate((r) => ((r.context as { tools_enabled: boolean }).tools_enabled = true))],
      ['other surface', mutate((r) => ((r.context as { surface: string }).surface = 'cli'))],
      ['other mode', mutate((r) => ((r.context as { mode: string }).mode = 'tool_use'))],
      ['principal not a UUID', mutate((r) => (r.principal = 'Agent::"admin"'))],
      ['content not a string', mutate((r) => ((r.context.response as { content: unknown }).content = { __extn: { fn: 'unknown', arg: 'x' } }))],
      ['negative bytes', mutate((r) => (r.context.response.bytes = -1))],
      ['fractional bytes', mutate((r) => (r.context.response.bytes = 1.5))],
      ['capabilities not strings', mutate((r) => ((r as { capabilities: unknown }).capabilities = [{ __entity: { type: 'Agent', id: 'x' } }]))],
      ['lone surrogate in content', mutate((r) => (r.context.response.content = 'se\uD800cret'))],
      ['missing response', mutate((r) => delete (r.context as Partial<RespondRequest['context']>).response)],
    ];
    for (const [what, forgedRequest] of forged) {
      const decision = authorizeRespond(set, forgedRequest);
      assert.equal(decision.decision, 'deny', what);
      assert.match(decision.reason, /^invalid respond request: /, what);
    }
    assert.equal(authorizeRespond(set, null as unknown as RespondRequest).decision, 'deny');
    assert.equal(canPermitSomeResponse(set, null as unknown as RespondRequestWithoutResponse).possible, false);
  });

  it('entity-looking strings in attributes stay strings', () => {
    const set = load('permit(principal, action, resource) when { principal.name == "declared" };');
    const decision = authorizeRespond(set, request('{"__entity": {"type": "Agent", "id": "x"}}', 'declared', ['{"__extn": {"fn": "unknown", "arg": "y"}}']));
    assert.equal(decision.decision, 'allow');
  });

  it('a policy set that crossed a thread boundary (a structured clone) decides the same', () => {
    const set = load(PERMIT, SECRET_FORBID);
    const copy = structuredClone(set);
    assert.equal(authorizeRespond(copy, request('fine')).decision, 'allow');
    assert.equal(authorizeRespond(copy, request('secret')).decision, 'deny');
  });

  it('many distinct policy sets in one thread keep deciding correctly (cache slots are reused)', () => {
    for (let i = 0; i < 40; i += 1) {
      const set = load(`permit(principal, action, resource) when { context.response.content == "${i}" };`);
      assert.equal(authorizeRespond(set, request(String(i))).decision, 'allow', String(i));
      assert.equal(authorizeRespond(set, request(String(i + 1))).decision, 'deny', String(i));
    }
  });
});

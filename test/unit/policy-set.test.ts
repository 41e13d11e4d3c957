import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { POLICY_FILE_MAX_BYTES } from '../../src/shared/limits.js';
import { loadPolicySet, policyNoticeText } from '../../src/shared/policy/policy-set.js';
import { RESPOND_SCHEMA_TEXT } from '../../src/shared/policy/respond-schema.js';
import { repoRoot as repo } from '../support/server-entry.js';

const examplesDir = path.join(repo, 'policies', 'examples');
const PERMIT = 'permit(principal, action == Action::"respond", resource);';

describe('respond schema', () => {
  it('the embedded schema is byte-for-byte policies/respond.cedarschema', () => {
    assert.equal(RESPOND_SCHEMA_TEXT, fs.readFileSync(path.join(repo, 'policies', 'respond.cedarschema'), 'utf8'));
  });

  it('parses as a Cedar schema', () => {
    assert.deepEqual(cedar.checkParseSchema(RESPOND_SCHEMA_TEXT), { type: 'success' });
  });

  it('every example policy validates against it with no finding', () => {
    const names = fs
      .readdirSync(examplesDir)
      .filter((name) => name.endsWith('.cedar'))
      .sort();
    assert.deepEqual(names, ['forbid-secret-content.cedar', 'permit-respond.cedar', 'restrict-by-capability.cedar']);
    for (const name of names) {
      const text = fs.readFileSync(path.join(examplesDir, name), 'utf8');
      const set = loadPolicySet([{ path: `policies/${name}`, text }]);
      assert.equal(set.mode, 'configured', name);
      assert.deepEqual(set.warnings, [], name);
      assert.equal(set.policies.length, 1, name);
      const answer = cedar.validate({ schema: RESPOND_SCHEMA_TEXT, policies: { staticPolicies: text } });
      assert.equal(answer.type, 'success', name);
      if (answer.type === 'success') assert.deepEqual(answer.validationErrors, [], name);
    }
  });
});

describe('loadPolicySet modes', () => {
  it('no files at all: default permission, said in one notice', () => {
    const set = loadPolicySet([]);
    assert.equal(set.mode, 'default-permit');
    assert.deepEqual(set.policies, []);
    assert.deepEqual(set.notices.map(policyNoticeText), ['no policy files: every response is permitted (default permission)']);
    assert.equal(set.denyReason, undefined);
  });

  it('loads Cedar text in file order then source order, with stable ids and one notice per file', () => {
    const set = loadPolicySet([
      {
        path: 'policies/a.cedar',
        text: `// shared\n${PERMIT}\n\n@id("second")\nforbid(principal, action, resource) when { context.response.content like "*x*" };\n`,
      },
      { path: 'policies/mcp-server/b.cedar', text: `${PERMIT}\n` },
    ]);
    assert.equal(set.mode, 'configured');
    assert.deepEqual(
      set.policies.map((policy) => [policy.id, policy.file]),
      [
        ['policies/a.cedar#0', 'policies/a.cedar'],
        ['policies/a.cedar#1', 'policies/a.cedar'],
        ['policies/mcp-server/b.cedar#0', 'policies/mcp-server/b.cedar'],
      ],
    );
    assert.equal(set.policies[0]?.text, PERMIT);
    assert.match(set.policies[1]?.text ?? '', /^@id\("second"\)\nforbid/);
    assert.deepEqual(set.notices.map(policyNoticeText), ['policies/a.cedar: loaded 2 policies', 'policies/mcp-server/b.cedar: loaded 1 policy']);
    assert.deepEqual(set.warnings, []);
  });

  it('keeps source order past ten policies (Cedar itself returns them sorted by generated id)', () => {
    const text = Array.from({ length: 12 }, (_, i) => `permit(principal, action, resource) when { ${i} == ${i} };`).join('\n');
    const set = loadPolicySet([{ path: 'policies/many.cedar', text }]);
    assert.deepEqual(
      set.policies.map((policy) => policy.text),
      Array.from({ length: 12 }, (_, i) => `permit(principal, action, resource) when { ${i} == ${i} };`),
    );
  });

  it('reads the JSON array form and skips inactive entries', () => {
    const text = JSON.stringify([
      { name: 'allow', source: PERMIT, active: true },
      { name: 'draft', source: 'forbid(principal, action, resource);', active: false },
      { name: 'pair', source: `${PERMIT}\nforbid(principal, action, resource) when { context.response.bytes > 10 };`, active: true },
    ]);
    const set = loadPolicySet([{ path: 'policies/set.cedar', text }]);
    assert.equal(set.mode, 'configured');
    assert.deepEqual(
      set.policies.map((policy) => policy.id),
      ['policies/set.cedar#allow', 'policies/set.cedar#pair.0', 'policies/set.cedar#pair.1'],
    );
    assert.deepEqual(set.notices.map(policyNoticeText), ['policies/set.cedar: loaded 3 policies, skipped 1 inactive entry']);
  });

  it('a leading byte order mark is tolerated', () => {
    const set = loadPolicySet([{ path: 'policies/bom.cedar', text: `\uFEFF${PERMIT}` }]);
    assert.equal(set.mode, 'configured');
  });

  it('the returned snapshot cannot be changed afterwards', () => {
    const set = loadPolicySet([{ path: 'policies/a.cedar', text: PERMIT }]);
    assert.throws(() => (set.policies as { id: string; file: string; text: string }[]).push({ id: 'x', file: 'x', text: PERMIT }));
    assert.throws(() => {
      (set as { mode: string }).mode = 'default-permit';
    });
  });
});

describe('loadPolicySet deny-all', () => {
  function assertDenyAll(files: Parameters<typeof loadPolicySet>[0], reason: RegExp): void {
    const set = loadPolicySet(files);
    assert.equal(set.mode, 'deny-all');
    assert.deepEqual(set.policies, []);
    assert.match(set.denyReason ?? '', reason);
    assert.ok(!(set.denyReason ?? '').includes('\n'), 'one line');
  }

  it('an empty file', () => {
    assertDenyAll([{ path: 'policies/empty.cedar', text: '' }], /policies\/empty\.cedar.*no active policy/);
  });

  it('files holding only comments and white space', () => {
    assertDenyAll(
      [
        { path: 'policies/a.cedar', text: '// nothing yet\n\n' },
        { path: 'policies/mcp-server/b.cedar', text: '   \n' },
      ],
      /policies\/a\.cedar, policies\/mcp-server\/b\.cedar\) holds no active policy/,
    );
  });

  it('a malformed file, even next to a sound one, naming the file, line and column', () => {
    const set = loadPolicySet([
      { path: 'policies/good.cedar', text: PERMIT },
      { path: 'policies/mcp-server/bad.cedar', text: `${PERMIT}\n// é\npermit(principal, action, resource) when { é };` },
    ]);
    assert.equal(set.mode, 'deny-all');
    assert.match(set.denyReason ?? '', /^policies\/mcp-server\/bad\.cedar: not valid Cedar: line 3, column 44: /);
    assert.equal(policyNoticeText(set.notices[0]!), 'policies/good.cedar: loaded 1 policy');
    assert.match(policyNoticeText(set.notices[1]!), /^policies\/mcp-server\/bad\.cedar: rejected: not valid Cedar: line 3/);
    // A reader asks the notice's kind, not its words.
    assert.deepEqual(
      set.notices.map((n) => n.kind),
      ['loaded', 'rejected'],
    );
  });

  it('an unreadable file', () => {
    assertDenyAll(
      [
        { path: 'policies/a.cedar', text: PERMIT },
        { path: 'policies/locked.cedar', error: 'EACCES: permission denied' },
      ],
      /^policies\/locked\.cedar: could not be read: EACCES: permission denied$/,
    );
  });

  it('a reader message that repeats the path is not doubled', () => {
    assertDenyAll(
      [{ path: 'policies/l.cedar', error: 'policies/l.cedar: is a symlink; symlinks are never followed' }],
      /^policies\/l\.cedar: could not be read: is a symlink; symlinks are never followed$/,
    );
  });

  it('an entry with neither text nor error', () => {
    assertDenyAll([{ path: 'policies/a.cedar' }], /policies\/a\.cedar: could not be read/);
  });

  it('a JSON array whose entries are all inactive', () => {
    const text = JSON.stringify([{ name: 'off', source: PERMIT, active: false }]);
    assertDenyAll([{ path: 'policies/off.cedar', text }], /policies\/off\.cedar\) holds no active policy/);
  });

  it('an empty JSON array', () => {
    assertDenyAll([{ path: 'policies/none.cedar', text: '[]' }], /holds no active policy/);
  });

  it('malformed JSON forms', () => {
    const cases: [string, RegExp][] = [
      ['[{"name": "a", "source": "permit(principal, action, resource);", "active": true}', /not valid JSON/],
      ['[1]', /entry 0 is not an object/],
      ['{"name": "a", "source": "permit(principal, action, resource);", "active": true}', /a JSON object; the JSON form is an array/],
      [JSON.stringify([{ name: 'a', source: PERMIT, active: 'true' }]), /"active" must be true or false/],
      [JSON.stringify([{ name: 'a', source: PERMIT }]), /"active" must be true or false/],
      [JSON.stringify([{ name: '', source: PERMIT, active: true }]), /"name" must be a non-empty string/],
      [JSON.stringify([{ name: 'a', source: 42, active: true }]), /"source" must be a string/],
      [JSON.stringify([{ name: 'a', source: PERMIT, active: true, enabled: true }]), /unknown key "enabled"/],
      [
        JSON.stringify([
          { name: 'a', source: PERMIT, active: true },
          { name: 'a', source: PERMIT, active: true },
        ]),
        /duplicate name "a"/,
      ],
      [JSON.stringify([{ name: 'a', source: 'permit(principal,', active: true }]), /entry "a": not valid Cedar: line 1/],
      [
        JSON.stringify([
          { name: 'a', source: 'permit(principal, action, resource) when { x }; // inactive copy', active: false },
          { name: 'b', source: 'forbid(', active: true },
        ]),
        /entry "b"/,
      ],
    ];
    for (const [text, reason] of cases) assertDenyAll([{ path: 'policies/j.cedar', text }], reason);
  });

  it('text that is not well-formed Unicode (a JSON escape leaving a lone surrogate)', () => {
    const source = 'permit(principal, action, resource) when { principal.name == \\"\\ud800\\" };';
    assertDenyAll([{ path: 'policies/j.cedar', text: `[{"name": "a", "source": "${source}", "active": true}]` }], /well-formed Unicode/);
    assertDenyAll(
      [{ path: 'policies/j.cedar', text: `[{"name": "\\udc00", "source": "${PERMIT.replace(/"/g, '\\"')}", "active": true}]` }],
      /well-formed Unicode/,
    );
    assertDenyAll([{ path: 'policies/t.cedar', text: `${PERMIT}\n// \ud800` }], /well-formed Unicode/);
  });

  it('a file name with a line break stays on one line in notices and the reason', () => {
    const set = loadPolicySet([{ path: 'policies/a\nb.cedar', text: 'permit(' }]);
    assert.equal(set.mode, 'deny-all');
    for (const line of [...set.notices.map(policyNoticeText), set.denyReason ?? '']) assert.ok(!line.includes('\n'), line);
    assert.match(policyNoticeText(set.notices[0]!), /^"policies\/a\\nb\.cedar": rejected/);
  });

  it('a policy template (an unlinked ?principal slot)', () => {
    assertDenyAll([{ path: 'policies/t.cedar', text: 'permit(principal == ?principal, action, resource);' }], /policy template/);
  });

  it('a file over the size limit', () => {
    const text = `${PERMIT}\n//${'x'.repeat(POLICY_FILE_MAX_BYTES)}\n`;
    assertDenyAll([{ path: 'policies/huge.cedar', text }], new RegExp(`policies/huge\\.cedar: larger than ${POLICY_FILE_MAX_BYTES} bytes`));
  });

  it('JSON entry names that would give two policies one id', () => {
    const text = JSON.stringify([
      { name: 'x', source: `${PERMIT}\n${PERMIT}`, active: true },
      { name: 'x.0', source: PERMIT, active: true },
    ]);
    assertDenyAll([{ path: 'policies/j.cedar', text }], /two policies would share the id/);
  });
});

describe('schema validation', () => {
  it('a policy naming a context field that does not exist makes the set deny all, naming the policy and line', () => {
    const text = `${PERMIT}\n\nforbid(principal, action, resource)\n  when { context.respnse.content like "*x*" };\n`;
    const set = loadPolicySet([{ path: 'policies/typo.cedar', text }]);
    assert.equal(set.mode, 'deny-all');
    assert.deepEqual(set.policies, []);
    assert.match(
      set.denyReason ?? '',
      /fails validation against the respond schema: policies\/typo\.cedar:3: line 4, column 10: attribute `respnse` in context for Action::"respond" not found/,
    );
  });

  it('an attribute the Agent entity does not have, and a response field that does not exist', () => {
    const text = JSON.stringify([
      { name: 'agent-attr', source: 'permit(principal, action, resource) when { principal.response == "x" };', active: true },
      { name: 'resp-field', source: 'forbid(principal, action, resource) when { context.response.text like "*x*" };', active: true },
    ]);
    const set = loadPolicySet([{ path: 'policies/j.cedar', text }]);
    assert.equal(set.mode, 'deny-all');
    assert.match(
      set.denyReason ?? '',
      /policies\/j\.cedar#agent-attr: entry "agent-attr": line 1, column \d+: attribute `response` on entity type `Agent` not found/,
    );
    assert.match(set.denyReason ?? '', /policies\/j\.cedar#resp-field: .*attribute `response\.text` in context/);
  });

  it('a type error and misused extension functions make the set deny all', () => {
    const broken = [
      ['forbid(principal, action, resource) when { context.response.content.contains("secret") };', /expected Set<.*> but saw String/],
      ['forbid(principal, action, resource) when { ip("x").isLoopback() };', /failed to parse as IP address/],
      ['forbid(principal, action, resource) when { decimal("abc").lessThan(decimal("1.0")) };', /extension function argument validation/],
      [
        'forbid(principal, action, resource) when { ip(context.response.content).isLoopback() };',
        /extension constructors may not be called with non-literal expressions/,
      ],
    ] as const;
    for (const [forbid, why] of broken) {
      const set = loadPolicySet([{ path: 'policies/a.cedar', text: `${PERMIT}\n${forbid}` }]);
      assert.equal(set.mode, 'deny-all', forbid);
      assert.match(set.denyReason ?? '', /^a policy fails validation against the respond schema: policies\/a\.cedar:\d+: /, forbid);
      assert.match(set.denyReason ?? '', why, forbid);
    }
  });

  it('a policy about other actions only is flagged, not fatal: it never applies to respond', () => {
    const others = [
      'permit(principal, action == Action::"read", resource) when { context.tool.name == "x" };',
      'forbid(principal, action in [Action::"read", Action::"write"], resource);',
    ];
    for (const other of others) {
      const set = loadPolicySet([{ path: 'policies/a.cedar', text: `${PERMIT}\n${other}` }]);
      assert.equal(set.mode, 'configured', other);
      assert.ok(set.warnings.length >= 1);
      for (const line of set.warnings) assert.match(line, /^policies\/a\.cedar:\d+: /);
      assert.ok(
        set.warnings.some((line) => /unrecognized action `Action::"(read|write)"`.*never applies to respond/.test(line)),
        set.warnings.join('\n'),
      );
    }
  });

  it('a broken policy whose scope includes respond among other actions is fatal', () => {
    const set = loadPolicySet([
      {
        path: 'policies/a.cedar',
        text: `${PERMIT}\nforbid(principal, action in [Action::"read", Action::"respond"], resource) when { context.response.text like "*x*" };`,
      },
    ]);
    assert.equal(set.mode, 'deny-all');
  });
});

// Name selection and the conversational check through the public API.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { canonicalHash } from '../../src/shared/canonical-json.js';
import {
  conversationalVerdict,
  definitionRefusalText,
  selectConversationalDefinition,
  type RegistryEntry,
} from '../../src/shared/dsl/conversational-definition.js';

const entry = (file: string, text: string): RegistryEntry => ({ stem: file.replace(/^agents\//, '').replace(/\.(symbi|dsl)$/, ''), file, text });

test('a single-agent file is selected by its stem under the declared name (alias)', () => {
  const text = '# alias\nagent real_name {\n  capabilities = ["read"]\n  with timeout = 10s {}\n}\n';
  const registry = [entry('agents/nickname.symbi', text)];
  const s = selectConversationalDefinition(registry, 'nickname');
  assert.ok(s.ok);
  const d = s.definition;
  assert.equal(d.declaredName, 'real_name');
  assert.equal(d.stem, 'nickname');
  assert.equal(d.file, 'agents/nickname.symbi');
  assert.equal(d.principal, responsePrincipal('real_name'));
  assert.equal(d.sourceText, text);
  assert.equal(d.sourceHash, canonicalHash(text).hash);
  assert.equal(d.declarationText, 'agent real_name {\n  capabilities = ["read"]\n  with timeout = 10s {}\n}');
  assert.equal(d.declarationHash, canonicalHash(d.declarationText).hash);
  assert.deepEqual(d.capabilities, ['read']);
  assert.equal(d.timeoutMs, 10_000);
  const verdict = conversationalVerdict(registry[0]!, registry);
  assert.ok(verdict.invocable);
  assert.equal(verdict.declaredName, 'real_name');
  // The facts a policy is asked about before inference are the selection's own.
  assert.deepEqual(verdict.facts, {
    stem: d.stem,
    file: d.file,
    declaredName: d.declaredName,
    principal: d.principal,
    sourceHash: d.sourceHash,
    declarationHash: d.declarationHash,
    capabilities: d.capabilities,
  });
  // The declared name itself is not a registry name.
  assert.equal(selectConversationalDefinition(registry, 'real_name').ok, false);
});

test('two files aliasing the same declared agent share one principal', () => {
  const text = 'agent shared {}';
  const registry = [entry('agents/a.symbi', text), entry('agents/b.dsl', text)];
  const a = selectConversationalDefinition(registry, 'a');
  const b = selectConversationalDefinition(registry, 'b');
  assert.ok(a.ok && b.ok);
  assert.equal(a.definition.principal, b.definition.principal);
});

test('a multi-agent file is selected by its stem, and only that declaration is cut out', () => {
  const text = 'agent helper {\n  policy theirs { require: "x" }\n}\nagent team {\n  policy ours { allow: "respond" }\n}\n';
  const s = selectConversationalDefinition([entry('agents/team.symbi', text)], 'team');
  assert.ok(s.ok, JSON.stringify(s));
  assert.equal(s.definition.declaredName, 'team');
  assert.equal(s.definition.declarationText, 'agent team {\n  policy ours { allow: "respond" }\n}');
  assert.deepEqual(s.definition.inlinePolicies, [{ name: 'ours', rules: 1 }]);
});

test('a multi-agent file without an agent named like the stem is refused, naming the agents', () => {
  const s = selectConversationalDefinition([entry('agents/crew.symbi', 'agent a {}\nagent b {}\n')], 'crew');
  assert.ok(!s.ok);
  assert.equal(s.refusal.kind, 'not_conversational');
  assert.match(definitionRefusalText(s.refusal), /`a` at 1:1, `b` at 2:1/);
  assert.match(definitionRefusalText(s.refusal), /none is named `crew`/);
});

test('foo.symbi beside foo.dsl is ambiguous, for selection and for the verdict', () => {
  const registry = [entry('agents/foo.symbi', 'agent foo {}'), entry('agents/foo.dsl', 'agent foo {}'), entry('agents/bar.symbi', 'agent bar {}')];
  const s = selectConversationalDefinition(registry, 'foo');
  assert.ok(!s.ok);
  assert.equal(s.refusal.kind, 'ambiguous_agent');
  assert.deepEqual(s.candidates, ['agents/foo.dsl', 'agents/foo.symbi']);
  assert.match(definitionRefusalText(s.refusal), /agents\/foo\.dsl and agents\/foo\.symbi/);
  const v = conversationalVerdict(registry[0]!, registry);
  assert.ok(!v.invocable);
  assert.deepEqual(v.refusal, s.refusal);
  assert.equal(conversationalVerdict(registry[2]!, registry).invocable, true);
});

test('an unknown name is named, with the registered stems as capped candidates', () => {
  const registry = Array.from({ length: 30 }, (_, i) => entry(`agents/a${String(i).padStart(2, '0')}.symbi`, 'agent x {}'));
  const s = selectConversationalDefinition(registry, 'missing');
  assert.ok(!s.ok);
  assert.equal(s.refusal.kind, 'unknown_agent');
  assert.equal(s.candidates.length, 20);
  // Which of them can be invoked is added by the supervisor from its startup verdicts (test/session/unknown-agent.test.ts).
  assert.equal(definitionRefusalText(s.refusal), 'unknown agent `missing`');
  const hostile = selectConversationalDefinition(registry, 'x\n'.repeat(100));
  assert.ok(!hostile.ok);
  const hostileText = definitionRefusalText(hostile.refusal);
  assert.ok(!hostileText.includes('\n') && hostileText.length < 400);
  const empty = selectConversationalDefinition([], 'x');
  assert.ok(!empty.ok && empty.refusal.kind === 'unknown_agent' && empty.candidates.length === 0);
});

const refusals: [string, string, RegExp][] = [
  ['parameters', 'agent p(x: int) {}', /agent `p` has parameters at 1:8; the text-response route runs conversational definitions only/],
  ['return type', 'agent p -> String {}', /agent `p` has a return type at 1:12/],
  ['function', 'agent p {\n  function f() { 1 }\n}', /agent `p` has a `function` `f` at 2:3/],
  [
    'with statements',
    'agent p {\n\n  with memory = "x" {\n    go();\n  }\n}',
    /agent `p` has a `with` block with statements at 3:3; the text-response route runs conversational definitions only/,
  ],
  ['with trailing expression', 'agent p {\n  with a = 1 { result }\n}', /`with` block with statements at 2:3/],
  ['executor', 'metadata { executor = "cli" }\nagent p {}', /metadata `executor` at 1:12 selects an alternate executor/],
  ['require rule', 'agent p { policy q { require: "x" } }', /a `require:` rule at 1:22/],
  ['audit rule', 'policy q { audit: "x" }\nagent p {}', /an `audit:` rule at 1:12/],
  ['function call', 'agent p { policy q { allow: "x" if f(principal.id) } }', /a function call in a condition at 1:36/],
  ['indexing', 'agent p { policy q { allow: "x" if principal.ids[0] == 1 } }', /indexing in a condition/],
  ['arithmetic', 'agent p { policy q { allow: "x" if principal.n * 2 == 4 } }', /arithmetic \(`\*`\)/],
  ['non-integer comparison', 'agent p { policy q { allow: "x" if principal.n < "b" } }', /`<` comparison of something other than integers/],
  ['in without literal array', 'agent p { policy q { allow: "x" if principal.n in context.list } }', /`in` whose right side is not a flat array/],
  ['nested in array', 'agent p { policy q { allow: "x" if principal.n in [[1]] } }', /`in` whose right side is not a flat array/],
  ['too many rules', `agent p { policy q { ${'allow: "x"\n'.repeat(129)} } }`, /past 128 policy rules/],
  [
    'too many condition tokens',
    `agent p { policy q { allow: "x" if ${Array(90).fill('principal.a == 1').join(' || ')} } }`,
    /tokens at 1:36; at most 256 tokens/,
  ],
  ['too deep condition', `agent p { policy q { allow: "x" if ${'('.repeat(25)}principal.ok${')'.repeat(25)} } }`, /nested deeper than 24 levels/],
  ['duplicate policy names', 'policy q { allow: "a" }\nagent p { policy q { deny: "b" } }', /duplicate policy name `q` at 2:11 \(first declared at 1:1\)/],
  ['empty policy', 'agent p { policy q { } }', /policy `q` at 1:11 is empty/],
  ['bad selector', 'agent p { policy q { allow: read } }', /unsupported selector in its `allow:` rule at 1:29/],
  ['number selector', 'agent p { policy q { deny: 3 } }', /unsupported selector/],
  ['unrooted name', 'agent p { policy q { allow: "x" if admin } }', /not rooted at `principal`/],
  ['syntax error', 'agent p {\n  capabilities = [\n}', /syntax error at 3:1: /],
  ['no agent', 'type T = int', /declares no agent/],
  ['duplicate selected name', 'agent p {}\nagent p {}', /declares agent `p` more than once/],
  ['bad timeout', 'agent p { with timeout = 0 {} }', /not a positive duration/],
  ['capability not a name', 'agent p { capabilities = [1] }', /capability at 1:27 that is not a name/],
];

for (const [what, text, pattern] of refusals) {
  test(`refused: ${what}`, () => {
    const registry = [entry('agents/p.symbi', text)];
    const s = selectConversationalDefinition(registry, 'p');
    assert.ok(!s.ok, `${what} was accepted`);
    assert.equal(s.refusal.kind, 'not_conversational');
    const message = definitionRefusalText(s.refusal);
    assert.match(message, pattern);
    assert.ok(message.startsWith('agents/p.symbi: '));
    assert.ok(!/[\r\n]/.test(message), 'one line');
    const v = conversationalVerdict(registry[0]!, registry);
    assert.deepEqual(v, { invocable: false, refusal: s.refusal });
  });
}

test('supported conditions are accepted and sibling agents do not count', () => {
  const text = [
    'policy base { allow: true }',
    'agent other { policy theirs { audit: "all" } function f() { 1 } with x = 1 { go(); } }',
    'agent p {',
    '  policy mine {',
    '    allow: ["read", "write"] if (principal.team == "ops" || not context.prod) && invocation.size >= -3',
    '    deny: "x" if !(principal.role in ["guest", 0, false]) && principal.level != 2 && context.flag == true',
    '    deny: false',
    '  }',
    '  with timeout = 600 {}',
    '  with timeout = 2m, sandbox = "tier1" {}',
    '}',
  ].join('\n');
  const s = selectConversationalDefinition([entry('agents/p.symbi', text)], 'p');
  assert.ok(s.ok, JSON.stringify(s));
  assert.equal(s.definition.timeoutMs, 120_000);
  assert.deepEqual(s.definition.inlinePolicies, [
    { name: 'base', rules: 1 },
    { name: 'mine', rules: 3 },
  ]);
  const tighter = selectConversationalDefinition([entry('agents/p.symbi', 'agent p { with timeout = 5 {} with timeout = 2.seconds {} }')], 'p');
  assert.ok(tighter.ok);
  assert.equal(tighter.definition.timeoutMs, 2_000);
  // Symbiont reads timeouts with humantime or as whole seconds: a fraction is not a timeout.
  const fraction = selectConversationalDefinition([entry('agents/p.symbi', 'agent p { with timeout = 1.5 {} }')], 'p');
  assert.ok(!fraction.ok && /not a positive duration/.test(definitionRefusalText(fraction.refusal)));
});

test('exactly 128 rules, 256 condition tokens and 24 levels are still accepted', () => {
  const rules = `agent p { policy q { ${'allow: "x"\n'.repeat(128)} } }`;
  assert.ok(selectConversationalDefinition([entry('agents/p.symbi', rules)], 'p').ok);
  // 64 comparisons of 3 tokens joined by 63 `||` = 255 tokens, plus one `!` = 256.
  const cond = '!' + '(' + Array(63).fill('principal.a').join(' || ') + ')';
  const tokens = 1 + 1 + 63 * 3 + 62 + 1;
  assert.ok(tokens <= 256);
  assert.ok(selectConversationalDefinition([entry('agents/p.symbi', `agent p { policy q { allow: "x" if ${cond} } }`)], 'p').ok);
  const deep = `agent p { policy q { allow: "x" if ${'('.repeat(22)}principal.ok${')'.repeat(22)} } }`;
  assert.ok(selectConversationalDefinition([entry('agents/p.symbi', deep)], 'p').ok);
});

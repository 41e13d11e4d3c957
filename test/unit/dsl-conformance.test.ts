// Conformance with Symbiont's own parser. Each case is a text written for one
// construct, with the verdict Symbiont's tree-sitter grammar gives it
// (crates/dsl/tree-sitter-symbiont/grammar.js in ThirdKeyAI/Symbiont) and,
// for accepted texts, the parts of the report that Symbiont's extraction code
// (crates/dsl/src/lib.rs) defines. Then Symbiont's own example agents, kept
// in test/fixtures/dsl/symbiont/, with the verdict its parser gives them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDslReport, type ParseReport } from '../../src/shared/dsl/parse-report.js';
import { repoRoot } from '../support/server-entry.js';

type Accepted = { text: string; report?: Partial<ParseReport> };

/** Texts Symbiont's grammar accepts (and this parser rejected before). */
const accepted: { [construct: string]: Accepted[] } = {
  'memory properties written `key value`': [
    {
      text: 'memory notes {\n  store markdown\n  path "data/notes"\n  retention 30d\n  search { vector_weight 0.5 keyword_weight 0.5 }\n}',
      report: {
        memories: [
          {
            name: 'notes',
            store: 'markdown',
            path: 'data/notes',
            retention_seconds: 30 * 86_400,
            search: { vector_weight: 0.5, keyword_weight: 0.5 },
            line: 1,
          },
        ],
        extraction_errors: [],
      },
    },
    {
      text: 'memory defaults { }',
      report: { memories: [{ name: 'defaults', store: 'markdown', path: 'data/agents', retention_seconds: 90 * 86_400, search: null, line: 1 }] },
    },
    {
      text: 'memory m { store "Markdown", retention "2w", search { } }',
      report: {
        memories: [
          { name: 'm', store: 'markdown', path: 'data/agents', retention_seconds: 14 * 86_400, search: { vector_weight: 0.7, keyword_weight: 0.3 }, line: 1 },
        ],
      },
    },
  ],
  'webhook properties written `key value`': [
    {
      text: 'webhook gh {\n  path "/hooks/x"\n  provider github\n  secret "s3cret"\n  agent reviewer\n  filter { json_path "$.action" contains "open" }\n}',
      report: {
        webhooks: [
          {
            name: 'gh',
            path: '/hooks/x',
            provider: 'github',
            secret: 's3cret',
            agent: 'reviewer',
            filter: { json_path: '$.action', equals: null, contains: 'open' },
            line: 1,
          },
        ],
        extraction_errors: [],
      },
    },
    {
      text: 'webhook pay { path "/stripe", provider "Stripe", }',
      report: { webhooks: [{ name: 'pay', path: '/stripe', provider: 'stripe', secret: '', agent: null, filter: null, line: 1 }] },
    },
    {
      text: 'webhook other { path "/x" provider gitlab }',
      report: { webhooks: [{ name: 'other', path: '/x', provider: 'custom', secret: '', agent: null, filter: null, line: 1 }] },
    },
    {
      text: 'webhook nopath { provider github }',
      report: { has_errors: false, extraction_errors: [{ line: 1, column: 1, message: "webhook 'nopath': must specify 'path'" }] },
    },
    {
      text: 'memory m { store sqlite retention forever search { vector_weight "0.5" } }',
      report: {
        has_errors: false,
        extraction_errors: [
          { line: 1, column: 12, message: "memory 'm': unknown store type 'sqlite'; the store is `markdown`" },
          { line: 1, column: 25, message: "memory 'm': invalid retention 'forever'; write a duration such as `90d` or `12w`" },
          { line: 1, column: 52, message: 'memory: invalid vector_weight \'"0.5"\'; write a number such as 0.7' },
        ],
      },
    },
  ],
  '`catch (Type e)` and `try` without `catch`': [
    { text: 'function f() {\n  try { a(); } catch (APIError e) { b(e); } catch (other) { c(); }\n}' },
    { text: 'function f() { try { a(); } }' },
  ],
  'optional commas': [
    { text: 'function f(x: int) { match x { 1 => "one" 2 => "two", _ => { other(); } } }' },
    {
      text: 'agent a { with sandbox = "docker" timeout = 10s { } }',
      report: { with_blocks: [{ agent: 'a', sandbox_tier: 'docker', timeout: 10, attributes: { sandbox: 'docker', timeout: '10s' }, statements: 0, line: 1 }] },
    },
    {
      text: 'agent a(x: int y: String) -> Out { }',
      report: {
        agents: [
          {
            name: 'a',
            parameters: [
              { name: 'x', type: 'int' },
              { name: 'y', type: 'String' },
            ],
            return_type: 'Out',
            capabilities: [],
            policies: [],
            with: [],
            line: 1,
          },
        ],
      },
    },
    { text: 'function f(x: int y: Map<String, int>) { }' },
    { text: 'type Point = {\n  x: int\n  y: int\n}' },
    { text: 'function f() { let r = { a: 1 b: 2 }; let t = Point { x: 1 y: 2 }; }' },
    { text: 'function f() { if let Pair(a b) = g() { } }' },
    { text: 'metadata { a = { x: 1 y: [1, 2,] } }', report: { metadata: { a: { x: 1, y: [1, 2] } } } },
  ],
  'string escapes': [
    { text: 'metadata { pattern = "\\d+\\.\\$" }', report: { metadata: { pattern: '\\d+\\.\\$' } } },
    { text: 'metadata { a = "\\/path" b = "caf\\u00e9" c = "say \\"hi\\"\\n" }', report: { metadata: { a: '\\/path', b: 'café', c: 'say "hi"\n' } } },
  ],
  'assignment to a call': [{ text: 'function f() { g() = x; a.b[0] = 1; n += 1; }' }],
  schedules: [
    {
      text: 'schedule nightly {\n  cron: "0 2 * * *",\n  agent: "reporter",\n  audit: "all_operations",\n  one_shot: false\n}',
      report: {
        schedules: [
          {
            name: 'nightly',
            cron: '0 2 * * *',
            at: null,
            timezone: 'UTC',
            agent: 'reporter',
            policy: null,
            audit: 'all_operations',
            one_shot: false,
            deliver: null,
            line: 1,
          },
        ],
        extraction_errors: [],
      },
    },
    {
      text: 'schedule once { at = "2026-03-31T23:59:00" timezone = "Europe/Paris" one_shot = true deliver = "slack://ops" policy = guard }',
      report: {
        schedules: [
          {
            name: 'once',
            cron: null,
            at: '2026-03-31T23:59:00',
            timezone: 'Europe/Paris',
            agent: null,
            policy: 'guard',
            audit: null,
            one_shot: true,
            deliver: 'slack://ops',
            line: 1,
          },
        ],
      },
    },
    {
      text: 'schedule neither { agent: "x" }',
      report: { has_errors: false, extraction_errors: [{ line: 1, column: 1, message: "schedule 'neither': must specify either 'cron' or 'at'" }] },
    },
    {
      text: 'schedule both { cron: "* * * * *" at: "2026-01-01T00:00:00" }',
      report: { has_errors: false, extraction_errors: [{ line: 1, column: 1, message: "schedule 'both': cannot specify both 'cron' and 'at'" }] },
    },
  ],
  channels: [
    {
      text: 'channel desk {\n  platform: "slack"\n  workspace: "acme"\n  channels: ["#support", "#help"]\n  default_agent: "bot"\n  dlp_profile: "strict"\n  audit_level: "full"\n  default_deny: true\n  data_classification { pii: redact, api_key: block }\n  policy rules { allow: "respond" }\n}',
      report: {
        channels: [
          {
            name: 'desk',
            platform: 'slack',
            workspace: 'acme',
            channels: ['#support', '#help'],
            default_agent: 'bot',
            dlp_profile: 'strict',
            audit_level: 'full',
            default_deny: true,
            data_classification: [
              { category: 'pii', action: 'redact' },
              { category: 'api_key', action: 'block' },
            ],
            line: 1,
          },
        ],
        policies: [{ name: 'rules', line: 10, scope: 'channel desk', rules: [{ kind: 'allow', line: 10, selector: 'respond', condition: null }] }],
        extraction_errors: [],
      },
    },
    {
      text: 'channel nameless { workspace = "w" }',
      report: { has_errors: false, extraction_errors: [{ line: 1, column: 1, message: "channel 'nameless': must specify 'platform'" }] },
    },
  ],
  '`with` timeouts in seconds and sandbox tiers': [
    {
      text: 'agent a {\n  with timeout = 20.seconds, sandbox = "Tier2" { }\n  with timeout = 120 { }\n  with timeout = "5m", sandbox = firecracker { }\n  with timeout = 2.hours, sandbox = E2B { }\n}',
      report: {
        with_blocks: [
          { agent: 'a', sandbox_tier: 'gvisor', timeout: 20, attributes: { timeout: '20.seconds', sandbox: 'Tier2' }, statements: 0, line: 2 },
          { agent: 'a', sandbox_tier: null, timeout: 120, attributes: { timeout: 120 }, statements: 0, line: 3 },
          { agent: 'a', sandbox_tier: 'firecracker', timeout: 300, attributes: { timeout: '5m', sandbox: 'firecracker' }, statements: 0, line: 4 },
          { agent: 'a', sandbox_tier: 'e2b', timeout: 7200, attributes: { timeout: '2.hours', sandbox: 'E2B' }, statements: 0, line: 5 },
        ],
        extraction_errors: [],
      },
    },
    {
      text: 'agent a { with sandbox = "kvm", timeout = 1.5 { } }',
      report: {
        has_errors: false,
        extraction_errors: [
          { line: 1, column: 16, message: 'Invalid sandbox tier: "kvm". Valid options are: docker (tier1), gvisor (tier2), firecracker (tier3), e2b' },
          { line: 1, column: 33, message: 'Invalid timeout value: 1.5; write a duration such as `30s`, `5m` or `30.seconds`, or a whole number of seconds' },
        ],
      },
    },
    { text: 'agent a { with timeout = [vault://x/y] { } }' },
    {
      text: 'agent a { with sandbox = DOCKER, timeout = "90" { } with timeout = "1h 30m" { } }',
      report: {
        with_blocks: [
          { agent: 'a', sandbox_tier: 'docker', timeout: 90, attributes: { sandbox: 'DOCKER', timeout: '90' }, statements: 0, line: 1 },
          { agent: 'a', sandbox_tier: null, timeout: 5400, attributes: { timeout: '1h 30m' }, statements: 0, line: 1 },
        ],
      },
    },
  ],
  'other accepted forms': [
    {
      text: 'agent a { capabilities: ["read", "write"] }',
      report: { agents: [{ name: 'a', parameters: [], return_type: null, capabilities: ['read', 'write'], policies: [], with: [], line: 1 }] },
    },
    {
      text: 'agent a { capabilities = [read, "write"] }',
      report: { agents: [{ name: 'a', parameters: [], return_type: null, capabilities: ['write'], policies: [], with: [], line: 1 }] },
    },
    // extract_capabilities collects every `string` node under the array, in source order.
    {
      text: 'agent a { capabilities = [tool("x"), ["y"], { "k": "z", j: "v" }, read] }',
      report: { agents: [{ name: 'a', parameters: [], return_type: null, capabilities: ['x', 'y', 'k', 'z', 'v'], policies: [], with: [], line: 1 }] },
    },
    { text: 'function f() { let d = [30s, 5m, 1w, 6months, 1y, 10.seconds, 1_000, 3.14]; let s = vault://a/b.c; }' },
    { text: 'function f() { let v = if a { 1 } else if b { 2 } else { 3 }; let g = x => x.y(z = 1, w: 2); }' },
    { text: '# hash comment\n// slash comment\nmetadata { version: "1" }' },
    { text: 'function f() { if a { 1 } else { 2 } == 3; if b { x } else { y }.z = 1; if c { 1 } else { 2 }; g(if d { 1 } else { 2 }) }' },
  ],
  // tree-sitter tries `Name` as a value with `{` as the block, and `Name { ... }` as a type literal; a block never starts with `name:`.
  'ASCII white space, and a byte order mark at the start': [
    {
      text: '\ufeffagent a {\u000b}\f\r\n\t',
      report: { agents: [{ name: 'a', parameters: [], return_type: null, capabilities: [], policies: [], with: [], line: 1 }] },
    },
  ],
  'keywords as names where the keyword cannot come': [
    { text: 'function f() { let r = { if: 1, true: 2, return: 3 }; g(type: 1, agent = 2, in: 3); }' },
    { text: 'function f(type: int, agent: String) { for in in xs { } policy.allow(); with = 1; }' },
    { text: 'agent a { with policy = 1, function = 2 { } }\nchannel c { platform: policy data_classification { agent: allow } }' },
  ],
  'a type literal in an `if`, `for` or `match` head': [
    { text: 'function f() { if x == Point { x: 1 } { g(); } }' },
    { text: 'function f() { for p in Pair { a: 1 b: 2 }.items() { g(p); } }' },
    { text: 'function f() { match Key { "k": 1 } { _ => 1 } if go { g(); } if ok {} }' },
  ],
};

/** Texts Symbiont's grammar rejects (and this parser accepted before), with where the error is. */
const rejected: { [construct: string]: [text: string, line: number, column: number][] } = {
  '`=` or `:` in memory and webhook blocks': [
    ['memory m { store = markdown }', 1, 18],
    ['webhook w { path: "/x" }', 1, 17],
    ['webhook w { path "/x" filter { equals = "a" } }', 1, 39],
  ],
  'catch forms other than `(e)` and `(Type e)`': [
    ['function f() { try { a(); } catch (e: T) { } }', 1, 37],
    ['function f() { try { a(); } catch e { } }', 1, 35],
    ['function f() { try { a(); } catch { } }', 1, 35],
  ],
  'match guards, constructor patterns, match as an expression': [
    ['function f() { match n { n if n > 0 => 1 } }', 1, 28],
    ['function f() { match n { Some(x) => 1 } }', 1, 30],
    ['function f() { let x = match n { _ => 1 }; }', 1, 30],
  ],
  '`with` attributes with `:`, untyped parameters, typed or destructuring `let` and `for`': [
    ['agent a { with timeout: 30 { } }', 1, 23],
    ['function f(a) { }', 1, 13],
    ['function f() { let x: int = 1; }', 1, 21],
    ['function f() { let (a, b) = t; }', 1, 20],
    ['function f() { for (k, v) in m { } }', 1, 20],
  ],
  'generic or `;`-terminated aliases, `T?`, `[T]` and `a::b` types': [
    ['type X = Array<T>', 1, 15],
    ['type X = Y;', 1, 11],
    ['function f(a: T?) { }', 1, 16],
    ['function f(a: [T]) { }', 1, 15],
    ['function f(a: a::b) { }', 1, 16],
  ],
  'record fields with `=`, multi-parameter or block lambdas, `if` without `else` as a value, `t.0`': [
    ['function f() { let r = { a = 1 }; }', 1, 28],
    ['function f() { let g = (a, b) => a; }', 1, 26],
    ['function f() { let g = a => { a }; }', 1, 33],
    ['function f() { let v = if a { 1 }; }', 1, 34],
    ['function f() { if let x = y { } else { }; }', 1, 41],
    ['function f() { let v = t.0; }', 1, 26],
  ],
  'policy `with` tails, separators between rules and members, a stray `;`': [
    ['policy p { audit: x with signature }', 1, 21],
    ['policy p { allow: "a"; deny: "b" }', 1, 22],
    ['policy p { allow: "a", deny: "b" }', 1, 22],
    ['agent a { capabilities = ["x"]; }', 1, 31],
    [';\nagent a { }', 1, 1],
  ],
  'metadata forms outside the grammar': [
    ['agent a { capabilities = "x" }', 1, 26],
    ['metadata { "key" = 1 }', 1, 12],
    ['metadata { key { a: 1 } }', 1, 16],
    ['metadata { key = f(1) }', 1, 19],
    ['metadata { key = -5 }', 1, 18],
  ],
  'arrays in schedules, strings in data_classification, vault in `with`, `1_000s`': [
    ['schedule s { cron: ["a"] }', 1, 20],
    ['channel c { platform: "slack" data_classification { pii: "redact" } }', 1, 58],
    ['agent a { with secret = vault://x { } }', 1, 25],
    ['agent a { with t = 1_000s { } }', 1, 27],
  ],
  'a type literal in a head with no block after it': [['function f() { if ready { x: 1 } }', 1, 34]],
  // tree-sitter reads a word as a keyword wherever that keyword may come: an argument may start with an expression, a block with a statement.
  'expression and statement keywords as argument names or as keys where a block may start': [
    ['function f() { g(if: 1); }', 1, 20],
    ['function f() { g(true = 1); }', 1, 23],
    ['function f(x: int) { match x { 1 => { if: 1 } } }', 1, 41],
    ['function f() { if Point { return: 1 } { } }', 1, 33],
  ],
  'lexical errors': [
    ['metadata { a = "unterminated }', 1, 16],
    ['metadata { a = "a\\\nb" }', 1, 16],
    ['agent a { } /* block */', 1, 13],
    ['agent a€ { }', 1, 8],
  ],
  // tree-sitter's `\s` is ASCII white space; a byte order mark is skipped only at the start.
  'white space that is not ASCII': [
    ['agent\u00a0a { }', 1, 6],
    ['agent a {\u3000}', 1, 10],
    ['agent a {\u2028}', 1, 10],
    ['agent a { }\ufeff', 1, 12],
  ],
};

for (const [construct, cases] of Object.entries(accepted)) {
  test(`accepted by Symbiont: ${construct}`, () => {
    for (const { text, report: expected } of cases) {
      const report = parseDslReport(text, 'conformance.symbi');
      assert.deepEqual(report.errors, [], `${JSON.stringify(text)} should parse`);
      assert.equal(report.has_errors, false);
      for (const [key, value] of Object.entries(expected ?? {})) {
        assert.deepEqual(report[key as keyof ParseReport], value, `${key} of ${JSON.stringify(text)}`);
      }
    }
  });
}

for (const [construct, cases] of Object.entries(rejected)) {
  test(`rejected by Symbiont: ${construct}`, () => {
    for (const [text, line, column] of cases) {
      const report = parseDslReport(text, 'conformance.symbi');
      assert.equal(report.has_errors, true, `${JSON.stringify(text)} should be rejected`);
      const first = report.errors[0]!;
      assert.deepEqual([first.line, first.column], [line, column], `${JSON.stringify(text)}: ${first.message}`);
      assert.ok(first.message.length > 10 && !/[\r\n]/.test(first.message));
    }
  });
}

const symbiontDir = join(repoRoot, 'test', 'fixtures', 'dsl', 'symbiont');
const symbiont = (name: string): ParseReport => parseDslReport(readFileSync(join(symbiontDir, name), 'utf8'), `agents/${name}`);

test("Symbiont's code_reviewer.symbi parses, with its metadata, policies and with block", () => {
  const report = symbiont('code_reviewer.symbi');
  assert.deepEqual(report.errors, []);
  assert.equal(report.metadata['executor'], 'claude_code');
  assert.deepEqual(report.agents[0]!.capabilities, ['read', 'analyze']);
  assert.deepEqual(report.agents[0]!.parameters, [{ name: 'target', type: 'String' }]);
  assert.deepEqual(
    report.policies[0]!.rules.map((r) => r.kind),
    ['allow', 'deny', 'require', 'audit'],
  );
  assert.deepEqual(report.with_blocks, [
    {
      agent: 'code_reviewer',
      sandbox_tier: 'docker',
      timeout: null,
      attributes: { memory: 'ephemeral', security: 'high', sandbox: 'Tier1' },
      statements: 1,
      line: 46,
    },
  ]);
});

test("Symbiont's webhook_handler.dsl parses; its bare timeout is seconds", () => {
  const report = symbiont('webhook_handler.dsl');
  assert.deepEqual(report.errors, []);
  assert.equal(report.agents[0]!.return_type, 'Maybe<Alert>');
  const block = report.with_blocks[0]!;
  assert.equal(block.timeout, 5000);
  assert.equal(block.sandbox_tier, 'docker');
  assert.equal(block.statements, 1);
  assert.deepEqual(report.extraction_errors, []);
});

test("Symbiont's workflow_orchestrator.dsl is rejected at its two rule tails, and its body still parses", () => {
  const report = symbiont('workflow_orchestrator.dsl');
  assert.deepEqual(
    report.errors.map((e) => [e.line, e.column]),
    [
      [6, 36],
      [7, 35],
    ],
  );
  assert.equal(report.with_blocks.length, 1);
  assert.equal(report.with_blocks[0]!.statements, 3);
});

// Symbiont's own DSL texts (example agents, test samples and strings, init
// templates, docs code blocks), kept unchanged in
// test/fixtures/dsl/symbiont/corpus/ and listed in SOURCE.md beside them with
// the verdict Symbiont's tree-sitter grammar gives each. The parser must give
// the same verdict on every one; for some, the report must hold what
// Symbiont's extraction code (crates/dsl/src/lib.rs) and its Rust tests
// (crates/dsl/tests/parser_tests.rs) say.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { parseDslReport, type ParseReport } from '../../src/shared/dsl/parse-report.js';
import { repoRoot } from '../support/server-entry.js';

const symbiontDir = join(repoRoot, 'test', 'fixtures', 'dsl', 'symbiont');
const corpusDir = join(symbiontDir, 'corpus');

/** `| \`file\` | repository | path | commit | accepts |` rows of SOURCE.md's corpus table. */
function listedVerdicts(): Map<string, 'accepts' | 'rejects'> {
  const verdicts = new Map<string, 'accepts' | 'rejects'>();
  for (const line of readFileSync(join(symbiontDir, 'SOURCE.md'), 'utf8').split('\n')) {
    const row = /^\| `([^`]+)` \|.*\| (accepts|rejects) \|$/.exec(line);
    if (row) verdicts.set(row[1]!, row[2] as 'accepts' | 'rejects');
  }
  return verdicts;
}

function corpusFiles(dir: string = corpusDir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? corpusFiles(join(dir, entry.name)) : [relative(corpusDir, join(dir, entry.name))],
  );
}

const report = (file: string): ParseReport => parseDslReport(readFileSync(join(corpusDir, file), 'utf8'), file);

test('every corpus file is listed in SOURCE.md with its origin and verdict, and every listed file exists', () => {
  const listed = [...listedVerdicts().keys()].sort();
  assert.deepEqual(corpusFiles().sort(), listed);
  assert.ok(listed.length >= 130, `only ${listed.length} texts listed`);
});

test("the parser gives every corpus text the verdict of Symbiont's grammar", () => {
  const disagreements: string[] = [];
  for (const [file, verdict] of listedVerdicts()) {
    const { errors } = report(file);
    const ours = errors.length === 0 ? 'accepts' : 'rejects';
    if (ours !== verdict)
      disagreements.push(`${file}: grammar ${verdict}, parser ${ours}${errors[0] ? ` (${errors[0].line}:${errors[0].column} ${errors[0].message})` : ''}`);
  }
  assert.deepEqual(disagreements, []);
});

test("every example agent in agents/ parses (Symbiont's formatter test requires it of all of them)", () => {
  for (const file of corpusFiles().filter((f) => f.startsWith('agents'))) {
    assert.deepEqual(report(file).errors, [], file);
  }
});

test('incident_tracker.symbi: its memory store and two webhooks as Symbiont extracts them', () => {
  const r = report('agents/incident_tracker.symbi');
  assert.deepEqual(r.memories, [
    {
      name: 'incident_history',
      store: 'markdown',
      path: 'data/incidents',
      retention_seconds: 730 * 86_400,
      search: { vector_weight: 0.5, keyword_weight: 0.5 },
      line: 11,
    },
  ]);
  assert.deepEqual(
    r.webhooks.map((w) => [w.name, w.path, w.provider, w.secret, w.agent, w.filter]),
    [
      [
        'github_incidents',
        '/hooks/github',
        'github',
        'vault://webhooks/github/secret',
        'incident_tracker',
        { json_path: '$.action', equals: 'created', contains: null },
      ],
      [
        'stripe_failures',
        '/hooks/stripe',
        'stripe',
        'vault://webhooks/stripe/secret',
        'incident_tracker',
        { json_path: '$.type', equals: null, contains: 'failed' },
      ],
    ],
  );
  assert.deepEqual(r.extraction_errors, []);
});

test('with blocks: Tier names map to backends, a bare timeout is seconds, array attributes are kept', () => {
  const scanner = report('agents/security_scanner.symbi').with_blocks[0]!;
  assert.equal(scanner.sandbox_tier, 'gvisor');
  assert.equal(scanner.timeout, 300_000);
  assert.deepEqual(scanner.attributes['requires'], ['security_clearance', 'scan_authorization']);
  // parser_tests.rs: test_parse_agent_with_sandbox_tier, test_with_block_timeout_parsing
  const e2b = report('rust-test-strings/parser_tests/sandbox_tier.symbi').with_blocks[0]!;
  assert.deepEqual([e2b.sandbox_tier, e2b.timeout, Object.keys(e2b.attributes).length], ['e2b', 60, 2]);
  for (const [file, seconds] of [
    ['timeout_30seconds', 30],
    ['timeout_60', 60],
    ['timeout_120', 120],
  ] as const) {
    assert.equal(report(`rust-test-strings/parser_tests/${file}.symbi`).with_blocks[0]!.timeout, seconds, file);
  }
  const multiple = report('rust-test-strings/parser_tests/multiple_with.symbi').with_blocks;
  assert.deepEqual(
    multiple.map((b) => [b.sandbox_tier, b.timeout]),
    [
      ['docker', null],
      ['e2b', 30],
    ],
  );
});

test('extraction errors of files that parse: an unknown sandbox tier, a channel without platform, a webhook without path', () => {
  const cases: [string, RegExp][] = [
    ['rust-test-strings/parser_tests/invalid_sandbox.symbi', /^Invalid sandbox tier: "invalid_sandbox"/],
    ['rust-test-strings/parser_tests/channel_missing_platform.symbi', /must specify 'platform'/],
    ['rust-test-strings/parser_tests/webhook_nopath.symbi', /must specify 'path'/],
  ];
  for (const [file, message] of cases) {
    const r = report(file);
    assert.equal(r.has_errors, false, file);
    assert.equal(r.extraction_errors.length, 1, file);
    assert.match(r.extraction_errors[0]!.message, message);
  }
});

test('valid_channel_definition.dsl: every channel field, its policy rules and data classification', () => {
  const r = report('samples/valid_channel_definition.dsl');
  assert.deepEqual(r.channels, [
    {
      name: 'slack_ops',
      platform: 'slack',
      workspace: 'acme-corp',
      channels: ['#ops-agents', '#compliance'],
      default_agent: 'compliance_check',
      dlp_profile: 'hipaa',
      audit_level: 'full',
      default_deny: true,
      data_classification: [
        { category: 'pii', action: 'redact' },
        { category: 'phi', action: 'block' },
        { category: 'api_key', action: 'redact' },
        { category: 'public', action: 'allow' },
      ],
      line: 1,
    },
  ]);
  assert.deepEqual(
    r.policies.map((p) => [p.scope, p.rules.map((rule) => [rule.kind, rule.selector])]),
    [
      [
        'channel slack_ops',
        [
          ['allow', 'invoke("compliance_check")'],
          ['deny', 'invoke("deploy_prod")'],
          ['audit', 'all_interactions'],
        ],
      ],
    ],
  );
});

test('schedules and memory from the Rust test strings, with their defaults', () => {
  const schedule = report('rust-test-strings/agents_md/schedules_named.symbi').schedules[0]!;
  assert.deepEqual([schedule.name, schedule.cron, schedule.timezone, schedule.agent], ['daily_report', '0 9 * * *', 'UTC', 'reporter']);
  const minimal = report('rust-test-strings/parser_tests/memory_minimal.symbi').memories[0]!;
  assert.deepEqual([minimal.path, minimal.retention_seconds, minimal.search], ['data/agents', 90 * 86_400, null]);
});

test('docs/inline-policies.md: a file-wide policy and an agent policy, each with its scope and rules', () => {
  const r = report('docs/inline-policies/shared_and_writer.symbi');
  assert.deepEqual(
    r.policies.map((p) => [p.name, p.scope, p.rules.map((rule) => [rule.kind, rule.selector, rule.condition])]),
    [
      ['shared', 'file', [['deny', ['shell', 'delegate::untrusted'], null]]],
      [
        'files',
        'agent writer',
        [
          ['allow', 'edit_file', 'invocation.arguments.path == "result.txt"'],
          ['deny', 'edit_file', 'invocation.arguments.content == ""'],
        ],
      ],
    ],
  );
  assert.deepEqual(
    r.with_blocks.map((b) => [b.agent, b.sandbox_tier, b.timeout, b.statements]),
    [['writer', 'docker', 20, 0]],
  );
});

test("execution_settings.rs strings: each agent's with blocks, Tier1 read as docker, as resolve_execution_settings sees them", () => {
  const two = report('rust-test-strings/execution_settings/selects_declared_agent.symbi');
  assert.deepEqual(
    two.with_blocks.map((b) => [b.agent, b.sandbox_tier, b.timeout]),
    [
      ['first', 'docker', 4],
      ['second', 'gvisor', 8],
    ],
  );
  const repeated = report('rust-test-strings/execution_settings/file_alias_repeated_blocks.symbi');
  assert.deepEqual(repeated.metadata, { description: 'sandbox = firecracker' });
  assert.deepEqual(
    repeated.with_blocks.map((b) => b.sandbox_tier),
    ['docker', 'docker'],
  );
  assert.match(report('rust-test-strings/execution_settings/malformed_02.symbi').extraction_errors[0]!.message, /^Invalid sandbox tier: "typo"/);
});

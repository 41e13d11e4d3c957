import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import * as limits from '../../src/shared/limits.js';
import { WORKER_RESOURCE_LIMITS } from '../../src/supervisor/threads/invocation-pool.js';
import { MAX_RETRIES, RETRYABLE_HTTP_STATUSES } from '../../src/worker/providers/retry-policy.js';
import { repoRoot } from '../support/server-entry.js';

// Where the documentation restates a number the code defines (a limit, a heap
// size, a thread count, a cap on a log line), the number is read from the
// source here and the sentence checked against it, so the two cannot drift.

/** A documentation page with runs of white space (line breaks included) read as one space. */
function doc(name: string): string {
  return fs.readFileSync(path.join(repoRoot, name), 'utf8').replace(/\s+/g, ' ');
}

/** A numeric constant of a source file that does not export it, evaluated from its declaration. */
function sourceConstant(file: string, name: string): number {
  const text = fs.readFileSync(path.join(repoRoot, file), 'utf8');
  const match = new RegExp(`\\bconst ${name}\\b[^=]*=\\s*([^;]+);`).exec(text);
  assert.ok(match, `${file} declares ${name}`);
  const expression = match[1]!.trim();
  assert.match(expression, /^[\d_ *+()]+$/, `${file}: ${name} is a plain number`);
  // oxlint-disable-next-line typescript/no-implied-eval -- the expression is checked above to be digits and arithmetic only
  return Number(new Function(`return (${expression});`)());
}

/** A number as the documentation writes it: 4,096 and 32,768 with a thousands comma. */
const written = (n: number): string => n.toLocaleString('en-US');

function assertSays(page: string, sentence: string): void {
  assert.ok(doc(page).includes(sentence), `${page} says "${sentence}"`);
}

const UNIT: Record<string, number> = { KiB: limits.KiB, MiB: limits.MiB, s: 1000, '': 1 };

/** The quantities in a limits-table cell, in order, in bytes, milliseconds or counts. */
function quantities(cell: string): number[] {
  const plain = cell.replace(/`[^`]*`/g, '').replace(/UTF-8/g, '');
  return [...plain.matchAll(/(\d[\d,]*)\s*(KiB|MiB|s\b)?/g)].map((m) => Number(m[1]!.replace(/,/g, '')) * UNIT[m[2] ?? '']!);
}

/**
 * A constant of limits.ts by name, one declared elsewhere as `file#NAME`, or a labelled reading of
 * the source for a figure that is not a plain constant (a heap size inside a pool's options).
 */
type Figure = keyof typeof limits | `${string}#${string}` | { label: string; read: () => number };

function figure(name: Figure): number {
  if (typeof name === 'object') return name.read();
  if (!name.includes('#')) return limits[name as keyof typeof limits];
  const [file, constant] = name.split('#') as [string, string];
  return sourceConstant(file, constant);
}

// Each row of docs/limits.md's table, by its first cell, and the constants its limits state, in order.
const LIMIT_ROWS: Record<string, Figure[][]> = {
  '`invoke_agent.prompt`, `system_prompt`': [['PROMPT_MAX_BYTES', 'SYSTEM_PROMPT_MAX_BYTES']],
  'output tokens per response (`max_tokens` / `max_completion_tokens`)': [['MAX_OUTPUT_TOKENS']],
  'response deadline': [['RESPONSE_DEADLINE_MS']],
  'typed inference request / response': [['TYPED_REQUEST_MAX_BYTES'], ['TYPED_RESPONSE_MAX_BYTES']],
  'one DSL file, or inline DSL given to `parse_dsl`': [['DSL_FILE_MAX_BYTES']],
  'analysis of one DSL text (`parse_dsl`, each agent source at startup)': [
    ['DSL_ANALYSIS_BUDGET_MS'],
    [
      {
        label: 'the analysis thread heap (dsl-analysis-pool.ts)',
        read: () =>
          limits.MiB *
          Number(
            /maxOldGenerationSizeMb: (\d+)/.exec(fs.readFileSync(path.join(repoRoot, 'src', 'supervisor', 'threads', 'dsl-analysis-pool.ts'), 'utf8'))?.[1],
          ),
      },
    ],
  ],
  '`parse_dsl` report': [['DSL_REPORT_MAX_BYTES']],
  '`parse_dsl` texts waiting for analysis': [['DSL_ANALYSIS_QUEUE_MAX']],
  'DSL diagnostics per report': [['DSL_MAX_ERRORS'], ['DSL_MAX_ERRORS'], ['DSL_MESSAGE_NAME_MAX_CHARS']],
  'DSL nesting': [['DSL_MAX_NESTING']],
  '`AGENTS.md`': [['AGENTS_MD_MAX_BYTES']],
  '`AGENTS.md` generated section used as guidance': [['AGENTS_MD_GUIDANCE_MAX_CHARS']],
  'directory entries inspected in `agents/`': [['DISCOVERY_MAX_ENTRIES']],
  'source bytes retained by discovery': [['DISCOVERY_MAX_RETAINED_BYTES']],
  'inline policy rules per selection / tokens per condition / nesting': [
    ['INLINE_POLICY_MAX_RULES'],
    ['INLINE_POLICY_MAX_CONDITION_TOKENS'],
    ['INLINE_POLICY_MAX_NESTING'],
  ],
  'one policy file': [['POLICY_FILE_MAX_BYTES'], ['POLICY_DISCOVERY_MAX_ENTRIES']],
  'folders below `policies/` recorded by identity at startup': [['RESERVED_POLICY_DIRECTORIES_MAX'], ['POLICY_DISCOVERY_MAX_ENTRIES']],
  '`get_agent_dsl.agent`': [['AGENT_NAME_MAX_BYTES']],
  'declared agent name (`agent NAME { ... }`)': [['AGENT_DECLARED_NAME_MAX_BYTES']],
  'project-relative path': [['PROJECT_PATH_MAX_BYTES']],
  'one line on standard input': [['STDIN_LINE_MAX_BYTES']],
  'answers waiting unread on standard output': [['STDOUT_BACKLOG_MAX_BYTES']],
  '`invoke_agent` calls in progress': [['INVOCATIONS_MAX_DEFAULT']],
  'cancelled `invoke_agent` calls whose runs are still being finished': [['CANCELLED_INVOCATIONS_FINISHING_MAX']],
  '`verify_schema.schema` / key URL / fetched key body': [
    ['SCHEMA_MAX_BYTES'],
    ['SCHEMA_KEY_URL_MAX_BYTES'],
    ['SCHEMA_KEY_BODY_MAX_BYTES'],
    ['SCHEMA_KEY_FETCH_TIMEOUT_MS'],
  ],
  'journal line / journal file read by the verifier': [['JOURNAL_LINE_MAX_BYTES'], ['JOURNAL_FILE_MAX_BYTES']],
  "an answer's text, as JSON, in the journal": [
    ['ANSWER_IN_JOURNAL_MAX_BYTES'],
    [{ label: 'the room left for the other fields', read: () => limits.JOURNAL_LINE_MAX_BYTES - limits.ANSWER_IN_JOURNAL_MAX_BYTES }],
  ],
  'SchemaPin pin store (`.symbiont/schemapin/pins.json`)': [['SCHEMAPIN_PINS_MAX_BYTES']],
  'tracked operations (provider calls and token reservations) classified by one `audit inspect`': [['JOURNAL_TRACKED_OPERATIONS_MAX']],
};

// Constants of limits.ts that are units, or documented elsewhere (checked below).
const NOT_IN_TABLE = new Set(['KiB', 'MiB', 'SHUTDOWN_GRACE_MS_DEFAULT']);

describe('documented facts match the constants in src', () => {
  it('docs/limits.md: every row of the limits table states its constants', () => {
    const text = fs.readFileSync(path.join(repoRoot, 'docs', 'limits.md'), 'utf8');
    const table = /\| what \| limit \|\n\|---\|---\|\n((?:\|.*\|\n)+)/.exec(text)?.[1];
    assert.ok(table, 'docs/limits.md has the limits table');
    const rows = table
      .trimEnd()
      .split('\n')
      .map((line) => line.split(' | ').map((c) => c.replace(/^\| ?| ?\|$/g, '')) as [string, string]);
    assert.deepEqual(rows.map(([what]) => what).sort(), Object.keys(LIMIT_ROWS).sort(), 'the table has exactly the rows this test knows');
    for (const [what, limit] of rows) {
      const stated = quantities(limit);
      const expected = LIMIT_ROWS[what]!;
      assert.equal(stated.length, expected.length, `"${what}": ${limit} states ${expected.length} figure(s)`);
      expected.forEach((names, i) => {
        for (const name of names) {
          const label = typeof name === 'object' ? name.label : name;
          assert.equal(stated[i], figure(name), `"${what}": ${limit} (${label} is ${figure(name)})`);
        }
      });
    }
  });

  it('docs/limits.md: every bound in src/shared/limits.ts has its row', () => {
    const inTable = new Set(
      Object.values(LIMIT_ROWS)
        .flat(2)
        .filter((f) => typeof f === 'string'),
    );
    const missing = Object.keys(limits).filter((name) => !NOT_IN_TABLE.has(name) && !inTable.has(name as keyof typeof limits));
    assert.deepEqual(missing, [], 'each new bound needs a row in the table of docs/limits.md and an entry in LIMIT_ROWS above');
  });

  it('the worker heap limits, thread count and runs per thread', () => {
    const { maxOldGenerationSizeMb: old, maxYoungGenerationSizeMb: young, stackSizeMb: stack } = WORKER_RESOURCE_LIMITS;
    assertSays('docs/architecture.md', `\`resourceLimits\` of ${written(old)} MiB old generation, ${young} MiB young generation and a ${stack} MiB stack`);
    assertSays('docs/development.md', `each worker thread has a ${young} MiB young generation`);
    const tasks = sourceConstant('src/supervisor/threads/invocation-pool.ts', 'TASKS_PER_WORKER');
    assertSays('docs/architecture.md', `each thread carries up to ${tasks} runs at once`);
    assertSays('docs/architecture.md', `| ${tasks} concurrent runs, small requests |`);
    const pool = fs.readFileSync(path.join(repoRoot, 'src', 'supervisor', 'threads', 'invocation-pool.ts'), 'utf8');
    const most = Number(/Math\.min\((\d+), availableParallelism\(\)\)/.exec(pool)?.[1]);
    assert.ok(most > 0, 'invocation-pool.ts caps the thread count');
    assertSays('docs/architecture.md', `up to one thread per available CPU, at most ${most},`);
  });

  it('provider output limit, retries and the provider message cap', () => {
    const tokens = written(limits.MAX_OUTPUT_TOKENS);
    assertSays('docs/providers.md', `Every request asks for at most ${tokens} output tokens`);
    assertSays('docs/providers.md', `\`SYMBI_MAX_OUTPUT_TOKENS=N\` (1 to ${tokens})`);
    const statuses = [...RETRYABLE_HTTP_STATUSES];
    assertSays('docs/providers.md', `HTTP ${statuses.slice(0, -1).join(', ')} and ${statuses.at(-1)}`);
    assert.equal(MAX_RETRIES, 2, 'the docs say "at most twice"');
    assertSays('docs/providers.md', 'are tried again at most twice');
    // However the sentence is worded: every "at most N characters" soon after "provider said" is the cap.
    const noteChars = sourceConstant('src/worker/providers/provider-http.ts', 'PROVIDER_MESSAGE_MAX_CHARS');
    for (const page of ['docs/providers.md', 'docs/running.md']) {
      const caps = [...doc(page).matchAll(/provider said.{0,200}?at most (\d+) characters/g)].map((m) => Number(m[1]));
      assert.ok(caps.length > 0, `${page} states the cap on the provider's message`);
      assert.deepEqual(
        caps,
        caps.map(() => noteChars),
        `${page}: the provider's message is cut at ${noteChars} characters`,
      );
    }
  });

  it('deadlines, guidance and inline policy bounds as the agent and DSL pages state them', () => {
    assertSays('docs/writing-agents.md', `tightens the ${limits.RESPONSE_DEADLINE_MS / 1000}-second deadline`);
    assertSays('docs/writing-agents.md', `(at most ${written(limits.AGENTS_MD_GUIDANCE_MAX_CHARS)} characters)`);
    assertSays(
      'docs/writing-agents.md',
      `at most ${limits.INLINE_POLICY_MAX_RULES} rules in all, ${limits.INLINE_POLICY_MAX_CONDITION_TOKENS} tokens per condition and ${limits.INLINE_POLICY_MAX_NESTING} levels of nesting`,
    );
    assertSays('docs/dsl.md', `past ${limits.DSL_MAX_NESTING} levels of nesting`);
  });

  it('standard error: the startup summary, malformed-message warnings and worker output', () => {
    assertSays('docs/running.md', `(or after ${sourceConstant('src/supervisor/commands/mcp-command.ts', 'HANDSHAKE_WAIT_MS')} ms)`);
    assertSays('docs/running.md', `Long agent lists are cut after ${sourceConstant('src/supervisor/startup/startup-summary.ts', 'SUMMARY_MAX_LISTED')}`);
    const first = sourceConstant('src/supervisor/session/mcp-session.ts', 'MALFORMED_LOG_FIRST');
    const every = sourceConstant('src/supervisor/session/mcp-session.ts', 'MALFORMED_LOG_EVERY');
    assertSays('docs/running.md', `(the first ${first} one by one, then every ${written(every)}th)`);
    assertSays('docs/running.md', `| a line longer than ${limits.STDIN_LINE_MAX_BYTES / limits.MiB} MiB |`);
    const lineChars = sourceConstant('src/worker/worker-stdout.ts', 'WORKER_OUTPUT_LINE_MAX_CHARS');
    const lines = sourceConstant('src/worker/worker-stdout.ts', 'WORKER_OUTPUT_LINES_PER_THREAD');
    assertSays('docs/architecture.md', `cut at ${lineChars} characters, at most ${lines} lines per thread`);
  });

  it('the shutdown grace option', () => {
    const max = sourceConstant('src/supervisor/commands/mcp-command.ts', 'SHUTDOWN_GRACE_MS_MAX');
    assertSays(
      'docs/running.md',
      `| \`--shutdown-grace-ms\` | \`${limits.SHUTDOWN_GRACE_MS_DEFAULT}\` | how long shutdown waits for live runs to record their end and for every request read to be answered (0 to ${max});`,
    );
  });
});

describe('the README stays a front door', () => {
  // Detail belongs in docs/ (docs/development.md, "Where a new file goes"); the README keeps what a newcomer reads first.
  const README_MAX_LINES = 350;

  it(`README.md is at most ${README_MAX_LINES} lines`, () => {
    const lines = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8').trimEnd().split('\n').length;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines; move detail to docs/ to keep it at ${README_MAX_LINES} or fewer`);
  });
});

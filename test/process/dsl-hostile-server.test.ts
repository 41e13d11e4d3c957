// Hostile DSL text through the real server (issue 26): parse_dsl texts and
// agent sources are analysed in the DSL analysis thread, so while they are
// analysed every other request is answered; each text gets a report or one
// line, and the server lives on. Needs `npm run build` (the server and the
// analysis thread run from dist/). Hostile agent sources at startup are the
// session's logic: served in process (test/support/in-process-server.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DSL_ANALYSIS_QUEUE_MAX, DSL_FILE_MAX_BYTES } from '../../src/shared/limits.js';
import { createOperatorLog } from '../../src/supervisor/operator/operator-log.js';
import { hostileInputs } from '../support/hostile-dsl-inputs.js';
import { INITIALIZE, INITIALIZED, jsonLine, spawnRawServer, type RawMessage, type RawStdioServer, toolCallLine } from '../support/raw-stdio.js';
import { makeProject, removeProject } from '../support/project.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { waitFor } from '../support/wait-for.js';
import { builtModule } from '../support/server-entry.js';

const GOOD = 'agent good {\n  capabilities = ["read"]\n}\n';
const ANSWER_WAIT_MS = 120_000;

type CallResult = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };

function resultOf(message: RawMessage): CallResult {
  assert.ok('result' in message, `a JSON-RPC error: ${JSON.stringify(message).slice(0, 300)}`);
  return message.result as CallResult;
}

/** A parse report, or one line saying why there is none. */
function assertReportOrOneLine(result: CallResult, what: string): void {
  const text = result.content.map((c) => c.text).join('');
  if (result.isError) {
    assert.ok(!text.includes('\n') && text.length <= 1024, `${what}: the error is not one short line: ${text.slice(0, 200)}`);
    assert.match(text, /^parse_dsl: <inline>: /, what);
    assert.doesNotMatch(text, /internal error/, what);
  } else {
    assert.equal(typeof result.structuredContent?.has_errors, 'boolean', what);
  }
}

describe('parse_dsl with hostile text', { timeout: 600_000 }, () => {
  let project: string;
  let server: RawStdioServer;
  /** The answer to each row's text: a later test on the same text reads it instead of having it analysed again. */
  const answers = new Map<string, CallResult>();

  before(async () => {
    project = makeProject({ 'agents/good.symbi': GOOD }, 'symbi-hostile-parse-');
    server = spawnRawServer(project);
    await server.send(jsonLine(INITIALIZE));
    await server.waitFor('init', ANSWER_WAIT_MS);
    await server.send(jsonLine(INITIALIZED));
  });

  after(async () => {
    await server.end();
    removeProject(project);
  });

  it('answers every row of the issue, and a list_agents sent meanwhile before the analyses are done', async () => {
    const rows = hostileInputs(DSL_FILE_MAX_BYTES);
    // Rows go in groups as large as the analysis queue takes; list_agents, sent 100 ms
    // after each group, must not wait for the group's analyses. The 100 ms is the scenario
    // (a call arriving while analyses are queued), not a wait for an event: the assertion
    // below holds however early list_agents arrives.
    for (let first = 0; first < rows.length; first += DSL_ANALYSIS_QUEUE_MAX) {
      const group = rows.slice(first, first + DSL_ANALYSIS_QUEUE_MAX).map((row, i) => ({ row, id: `p${first + i}` }));
      for (const { row, id } of group) await server.send(toolCallLine(id, 'parse_dsl', { content: row.text }));
      await new Promise((r) => setTimeout(r, 100));
      await server.send(toolCallLine(`list${first}`, 'list_agents', {}));
      const list = resultOf(await server.waitFor(`list${first}`, ANSWER_WAIT_MS));
      assert.equal(list.isError, undefined);
      const answered = group.filter(({ id }) => server.messages().some((m) => m.id === id)).length;
      assert.ok(answered < group.length, `list_agents waited for all ${group.length} analyses of its group`);
      for (const { row, id } of group) {
        const result = resultOf(await server.waitFor(id, ANSWER_WAIT_MS));
        answers.set(row.text, result);
        assertReportOrOneLine(result, row.name);
        assert.doesNotMatch(result.content[0]!.text, /^parse_dsl: <inline>: busy/, row.name);
      }
    }

    // Still alive and well.
    await server.send(toolCallLine('again', 'parse_dsl', { content: GOOD }));
    const again = resultOf(await server.waitFor('again', ANSWER_WAIT_MS));
    assert.deepEqual(
      (again.structuredContent!.agents as { name: string }[]).map((a) => a.name),
      ['good'],
    );
  });

  it('turns a report over the answer limit into one line', async () => {
    // 123,008 classification rules report as about 8.9 MB of JSON, over the 4 MiB answer limit.
    // One of the rows: its answer above, when that test ran.
    const content = `channel c { data_classification { ${'a: b, '.repeat(123_008)}} }`;
    let big = answers.get(content);
    if (big === undefined) {
      await server.send(toolCallLine('big', 'parse_dsl', { content }));
      big = resultOf(await server.waitFor('big', ANSWER_WAIT_MS));
    }
    assert.equal(big.isError, true);
    assert.match(
      big.content[0]!.text,
      /^parse_dsl: <inline>: the parse report would be \d+ bytes, over the 4194304-byte answer limit; split the text into smaller files$/,
    );
  });
});

describe('hostile agent sources at startup', { timeout: 600_000 }, () => {
  const hostile = hostileInputs(DSL_FILE_MAX_BYTES).filter((row) => !/1 MiB|to 1 MiB/.test(row.name) || /@|\|\|/.test(row.name));
  let project: string;
  let server: InProcessServer;

  before(async () => {
    const files: Record<string, string> = { 'agents/good.symbi': GOOD };
    hostile.forEach((row, i) => (files[`agents/hostile${i}.symbi`] = row.text));
    project = makeProject(files, 'symbi-hostile-agents-');
    server = await startInProcessServer(project);
  });

  after(async () => {
    await server.close();
    removeProject(project);
  });

  it('lists every file, the good one invocable, each hostile one refused or listed on its own', async () => {
    const list = await server.call('list_agents', {});
    assert.equal(list.isError, undefined);
    const data = list.structuredContent as { agents: { file: string; invocable: boolean; reason?: string }[]; left_out: { file: string; reason: string }[] };
    const good = data.agents.find((a) => a.file === 'agents/good.symbi');
    assert.equal(good?.invocable, true);
    const seen = [...data.agents.map((a) => a.file), ...data.left_out.map((s) => s.file)].sort();
    assert.deepEqual(seen, ['agents/good.symbi', ...hostile.map((_, i) => `agents/hostile${i}.symbi`)].sort());
    for (const entry of [...data.agents.map((a) => a.reason ?? ''), ...data.left_out.map((s) => s.reason)]) {
      assert.ok(entry.length <= 1024 && !entry.includes('\n'), `reason: ${entry.slice(0, 200)}`);
    }
    const answer = await server.call('get_agent_dsl', { agent: 'good' });
    assert.equal(answer.isError, undefined);
  });

  it('selects hostile files for invoke_agent in the analysis thread: the refusal, or the next check', async () => {
    const listIndex = hostile.findIndex((row) => row.name.startsWith('"a", x 123,050'));
    const chainIndex = hostile.findIndex((row) => row.name.startsWith('member chain .b'));
    // A megabyte-class file that is a valid conversational definition: selected, then refused for want of a provider.
    const big = await server.call('invoke_agent', { agent: `hostile${listIndex}`, prompt: 'hi' });
    assert.equal(big.isError, true);
    assert.match(big.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), /no model provider is configured/);
    const chain = await server.call('invoke_agent', { agent: `hostile${chainIndex}`, prompt: 'hi' });
    assert.equal(chain.isError, true);
    assert.match(chain.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), /has a capability at 1:27 that is not a name/);
  });

  it('writes the startup summary', async () => {
    await waitFor('the startup summary', () => (/agents: \d+ found/.test(server.stderr()) ? true : undefined), 60_000);
    assert.match(server.stderr(), new RegExp(`agents: \\d+ found, \\d+ invocable, \\d+ left out`));
    assert.doesNotMatch(server.stderr(), /internal error|failed unexpectedly/);
  });
});

describe('the DSL analysis thread', { timeout: 120_000 }, () => {
  it('ends a text over its budget with one line, keeps the event loop free meanwhile, and starts a fresh thread for the next text', async () => {
    const { DslAnalysisPool } = (await import(
      builtModule('supervisor/threads/dsl-analysis-pool.js')
    )) as typeof import('../../src/supervisor/threads/dsl-analysis-pool.js');
    const pool = new DslAnalysisPool({ log: createOperatorLog('text'), budgetMs: 50 });
    try {
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 5);
      const slow = await pool.run({ kind: 'report', text: `agent a { capabilities = [a${'.b'.repeat(500_000)}] }`, source: '<inline>' });
      clearInterval(ticker);
      assert.deepEqual(slow, { ok: false, message: 'too complex to analyse within 0.05 s; the analysis was stopped' });
      assert.ok(ticks > 0, 'the event loop did not run while the text was analysed');
      const next = await pool.run({ kind: 'report', text: GOOD, source: 'good' });
      assert.equal(next.ok, true);
      assert.equal(JSON.parse(next.ok ? next.value : '{}').agents[0].name, 'good');
    } finally {
      await pool.close();
    }
  });

  it(`holds at most ${DSL_ANALYSIS_QUEUE_MAX} waiting parse_dsl texts, and says it is busy past that`, async () => {
    const { DslAnalysisPool } = (await import(
      builtModule('supervisor/threads/dsl-analysis-pool.js')
    )) as typeof import('../../src/supervisor/threads/dsl-analysis-pool.js');
    const pool = new DslAnalysisPool({ log: createOperatorLog('text') });
    try {
      const running = pool.run({ kind: 'report', text: GOOD, source: 'running' });
      const waiting = Array.from({ length: DSL_ANALYSIS_QUEUE_MAX }, (_, i) => pool.run({ kind: 'report', text: GOOD, source: `waiting${i}` }));
      const refused = await pool.run({ kind: 'report', text: GOOD, source: 'one too many' });
      assert.deepEqual(refused, {
        ok: false,
        message: `busy: ${DSL_ANALYSIS_QUEUE_MAX} texts are already waiting for analysis; send this one again once they are answered`,
      });
      for (const outcome of await Promise.all([running, ...waiting])) assert.equal(outcome.ok, true);
      assert.equal((await pool.run({ kind: 'report', text: GOOD, source: 'later' })).ok, true);
    } finally {
      await pool.close();
    }
  });
});

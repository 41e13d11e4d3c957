import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { LOG_EVENTS } from '../../src/supervisor/operator/log-events.js';
import { suiteFixture } from '../support/suite-fixture.js';
import { providerEnv, startServer, textOf } from '../support/server.js';
import { repoRoot } from '../support/server-entry.js';
import { waitFor } from '../support/wait-for.js';
import { parseOperatorLines } from '../support/operator-lines.js';

// Every standard error line is a named event from the table in docs/running.md, in both formats
// (issue 34, item 1), and the run lines say why a run ended: a deny by the policy's @id, a retry
// when it happens, a warning when no text was released; the summary counts the session (item 2).

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'policies/permit-respond.cedar': fs.readFileSync(path.join(repoRoot, 'policies', 'examples', 'permit-respond.cedar'), 'utf8'),
  // No @id: named by file:line.
  'policies/forbid-tool.cedar':
    '// a forbid without an @id\n\nforbid (principal, action == Action::"respond", resource)\nwhen { context.response.content like "*forbidden-words*" };\n',
  'policies/forbid-secret-content.cedar': fs.readFileSync(path.join(repoRoot, 'policies', 'examples', 'forbid-secret-content.cedar'), 'utf8'),
};

/** The event table of docs/running.md: name -> the levels it allows. */
function documentedEvents(): Map<string, string[]> {
  const text = fs.readFileSync(path.join(repoRoot, 'docs', 'running.md'), 'utf8');
  const section = text.slice(text.indexOf('### Events'), text.indexOf('`run.ended` has `outcome`'));
  const events = new Map<string, string[]>();
  for (const match of section.matchAll(/^\| `([a-z_.]+)` \| ([a-z /]+) \|/gm))
    events.set(
      match[1]!,
      match[2]!.split(' / ').map((l) => l.trim()),
    );
  return events;
}

describe('standard error: named events, documented', () => {
  const shared = suiteFixture(FILES);

  it('documents exactly the events the server can write', () => {
    assert.deepEqual([...documentedEvents().keys()].sort(), [...LOG_EVENTS].sort());
  });

  for (const format of ['text', 'json'] as const) {
    it(`a mixed session writes only documented events, each with its time and level (--log-format ${format})`, async () => {
      const server = await startServer(shared.project, { env: providerEnv(shared.endpoint.url), args: ['--log-format', format] });
      const pid = server.pid();
      const call = (prompt: string, agent = 'assistant') => server.call('invoke_agent', { agent, prompt });
      const answered = await call('Say hello');
      assert.equal(answered.isError, undefined, textOf(answered));
      assert.equal((await call('tell me [[secret]]')).isError, true);
      assert.equal((await call('say the forbidden-words [[fixed:forbidden-words]]')).isError, true);
      assert.equal((await call(`flaky ${format} [[http:code=500,times=1]]`)).isError, undefined);
      assert.equal((await call('use a tool [[tool-call]]')).isError, true);
      assert.equal((await call('bad [[http:code=400]]')).isError, true);
      assert.equal((await call('hello', 'nobody')).isError, true);
      // A cancel while the provider holds the answer.
      const controller = new AbortController();
      const held = shared.endpoint.requests.length;
      const cancelled = server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'wait [[hold]]' } }, undefined, {
        signal: controller.signal,
      });
      await waitFor('the held request', () => (shared.endpoint.requests.length > held ? true : undefined), 10_000);
      controller.abort();
      await cancelled.catch(() => undefined);
      await waitFor('the cancelled run to end', () => (/run\.ended.*(cancelled)/.test(server.stderr()) ? true : undefined), 10_000);
      await server.close();
      await waitFor('the summary', () => (server.stderr().includes('summary') ? true : undefined), 10_000);

      const documented = documentedEvents();
      if (process.env.SHOW_STDERR) console.log(server.stderr());
      const lines = parseOperatorLines(server.stderr(), format);
      for (const line of lines) {
        assert.ok(documented.has(line.event), `documented event: ${line.event}`);
        assert.ok(documented.get(line.event)!.includes(line.level), `${line.event} at a documented level, not ${line.level}`);
        assert.equal(new Date(line.time).toISOString(), line.time, 'an ISO 8601 UTC time');
      }
      const ended = lines.filter((l) => l.event === 'run.ended');
      const reasons = ended.map((l) => l.fields.reason);
      assert.deepEqual(reasons, ['completed', 'policy_denied', 'policy_denied', 'completed', 'tool_call_withheld', 'provider_http_400', 'cancelled']);
      // Issue 48, item 3: withheld text is a warning, a provider failure an error, the client's cancel info.
      assert.deepEqual(
        ended.map((l) => l.level),
        ['info', 'warn', 'warn', 'info', 'warn', 'error', 'info'],
      );
      // The run line says what was called, how often, and where its journal is (from the project folder).
      assert.deepEqual(
        ended.map((l) => String(l.fields.attempts)),
        ['1', '1', '1', '2', '1', '1', '1'],
      );
      for (const line of ended) {
        assert.equal(line.fields.provider, 'openai');
        assert.equal(line.fields.model, 'synthetic-model');
        const journal = String(line.fields.journal);
        assert.match(journal, /^\.symbiont\/governed\/[^/]+\.jsonl$/);
        assert.ok(journal.endsWith(`.${String(line.fields.run_id)}.jsonl`), journal);
        assert.ok(fs.statSync(path.join(shared.project, journal)).isFile(), `${journal} is on disk`);
      }
      // The cancel says who cancelled, on both its lines.
      assert.equal(ended[6]!.fields.cancelled_by, 'client');
      assert.deepEqual(
        lines.filter((l) => l.event === 'run.cancelled').map((l) => l.fields.by),
        ['client'],
      );
      assert.ok(!ended.slice(0, 6).some((l) => 'cancelled_by' in l.fields), 'only the cancelled run names a canceller');
      if (format === 'json') {
        // pino's own fields: the server's pid and host on every line (two servers in one collector).
        const objects = server
          .stderr()
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        assert.ok(objects.every((o) => o.pid === pid && o.hostname === os.hostname() && typeof o.level === 'number'));
      }
      // A deny names the determining policy by its @id, else by file:line.
      assert.deepEqual(ended[1]!.fields.policies, ['forbid-secret-content']);
      assert.deepEqual(ended[2]!.fields.policies, ['policies/forbid-tool.cedar:3']);
      assert.deepEqual(
        lines.filter((l) => l.event === 'policy.denied').map((l) => l.fields.policies),
        [['forbid-secret-content'], ['policies/forbid-tool.cedar:3']],
      );
      // The retry is written when it happens, before its run ends.
      const retryRun = ended[3]!.fields.run_id;
      const retryAt = lines.findIndex((l) => l.event === 'provider.retry' && l.fields.run_id === retryRun);
      assert.ok(retryAt !== -1, 'a provider.retry line');
      assert.ok(retryAt < lines.indexOf(ended[3]!), 'the retry line comes before its run.ended');
      assert.equal(String(lines[retryAt]!.fields.status), '500');
      assert.ok(
        lines.some((l) => l.event === 'invoke.refused'),
        'the unknown agent refused',
      );
      // The summary counts the session.
      const summary = lines.find((l) => l.event === 'summary');
      assert.ok(summary, 'a summary line');
      assert.equal(String(summary.fields.runs), '7');
      assert.deepEqual(summary.fields.outcomes, { cancelled: 1, completed: 2, denied: 2, error: 2 });
      assert.deepEqual(summary.fields.reasons, { cancelled: 1, completed: 2, policy_denied: 2, provider_http_400: 1, tool_call_withheld: 1 });
      assert.equal(String(summary.fields.refused_before_inference), '1');
      assert.equal(String(summary.fields.in_progress_max), '1');
      assert.ok(Number(summary.fields.p99_ms) >= Number(summary.fields.p50_ms), 'p99 is at least p50');
      assert.ok(Number(summary.fields.rss_bytes) > 0, 'RSS is given');
      assert.ok(lines.findIndex((l) => l.event === 'shutdown') < lines.indexOf(summary), 'the summary follows the shutdown line');
    });
  }
});

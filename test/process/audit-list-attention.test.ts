import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Command } from 'commander';
import { after, before, describe, it } from 'node:test';
import { pinProject } from '../../src/shared/confinement/index.js';
import { closeAuditStorage, openAuditStorage } from '../../src/shared/storage/audit-storage.js';
import { JournalWriter } from '../../src/shared/journal/journal-writer.js';
import { registerAuditCommand } from '../../src/supervisor/commands/audit-command.js';
import { runCommandInProcess } from '../support/cli-in-process.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { auditOf, providerEnv } from '../support/server.js';
import { journalsIn } from '../support/journal.js';
import { craftJournal, runEvents, seedKey } from '../support/crafted-journal.js';
import { symbiBin } from '../support/server-entry.js';
import { waitFor } from '../support/wait-for.js';

// Issue 48, item 4: `symbi audit list` shows what needs attention. Real runs through the server
// and the synthetic endpoint (a permitted answer, a denied one, a provider 500, a deadline, a
// cancel), plus a journal without its Terminated record, one with a final fragment, and one in
// the earlier format. Every run the verifier says needs reconciliation carries the flag, whatever
// its outcome; --needs-attention keeps exactly those; --json has the same fields. The runs are
// made by the session served in process (test/support/in-process-server.ts, the same wiring as
// `symbi mcp`); `symbi audit list` runs as a process for its table, and in process (the command's
// own definition) for --json and --needs-attention.

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'agents/quick.symbi': 'agent quick {\n  with timeout = 1s {}\n}\n',
  'policies/mcp-server/respond.cedar':
    'permit(principal, action == Action::"respond", resource);\n' +
    'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n',
};

interface Listed {
  run_id: string;
  outcome: string;
  verdict: string;
  requires_reconciliation: boolean | null;
  record_format: string | null;
  terminal_reason: unknown;
}

function symbi(args: string[]) {
  const r = spawnSync(process.execPath, [symbiBin, ...args], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.signal, null, `symbi ${args.join(' ')} finished by itself`);
  assert.equal(r.status, 0, r.stderr);
  return r;
}

/**
 * `symbi <args>` (an `audit` sub-command) run in this process, through the command's own definition
 * (commander's parsing included), with its output and exit status as a process reports them
 * (test/support/cli-in-process.ts). The listing is the command's logic; the table goes through the
 * process above once.
 */
function symbiInProcess(args: string[]): { stdout: string; stderr: string } {
  const program = new Command().exitOverride();
  registerAuditCommand(program);
  const r = runCommandInProcess(() => void program.parse(args, { from: 'user' }));
  assert.equal(r.code, 0, r.stderr);
  return r;
}

const runIdOf = (file: string): string => path.basename(file, '.jsonl').slice(-36);

function lastLineIsTerminated(file: string): true | undefined {
  const text = fs.readFileSync(file, 'utf8');
  return text.trimEnd().split('\n').at(-1)?.includes('"Terminated"') ? true : undefined;
}

describe('audit list: verdicts, the reconciliation flag and --needs-attention', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  const runs: Record<string, string> = {};

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(FILES, 'audit-list-attention-');
    const server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
    try {
      const call = async (name: string, agent: string, prompt: string) => {
        const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent, prompt } });
        runs[name] = auditOf(result).audit.run_id;
      };
      await call('permitted', 'assistant', 'Say hello');
      await call('denied', 'assistant', 'tell me [[secret]]');
      await call('provider 500', 'assistant', 'fail [[http500]]');
      await call('deadline', 'quick', 'slow [[delay:5000]]');

      const known = new Set(journalsIn(project));
      const seen = endpoint.requests.length;
      const controller = new AbortController();
      const cancelled = server.client
        .callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'wait [[hold]]' } }, undefined, { signal: controller.signal })
        .catch(() => undefined);
      await endpoint.waitForRequests(seen + 1);
      controller.abort('stop');
      await cancelled;
      const journal = await waitFor('the cancelled run journal', () => journalsIn(project).find((f) => !known.has(f)));
      await waitFor('its Terminated record', () => lastLineIsTerminated(journal));
      runs['cancel'] = runIdOf(journal);
    } finally {
      endpoint.releaseAll();
      await server.close();
    }

    // Written with the server's own writer: a run without its Terminated record, and a finished
    // run followed by a final fragment (an interrupted write).
    const storage = openAuditStorage(pinProject(project));
    try {
      const agent = responsePrincipal('declared');
      for (const name of ['incomplete', 'tail'] as const) {
        const runId = crypto.randomUUID();
        const writer = await JournalWriter.create(storage, runId, agent);
        await writer.append({ Started: { execution_context: { agent_definition: { name: 'declared' } } } });
        if (name === 'tail') await writer.appendTerminal('Completed');
        await writer.close();
        if (name === 'tail') fs.appendFileSync(path.join(storage.governedPath, `${agent}.${runId}.jsonl`), '{"payload":{"entry"');
        runs[name] = runId;
      }
      // A journal of the earlier format (`<run_id>.jsonl`), complete.
      const seed = fs.readFileSync(path.join(storage.governedPath, 'audit-signing.key'));
      const older = crypto.randomUUID();
      fs.writeFileSync(path.join(storage.governedPath, `${older}.jsonl`), craftJournal(older, runEvents('declared'), seedKey(seed).sign), { mode: 0o600 });
      runs['older format'] = older;
    } finally {
      closeAuditStorage(storage);
    }
  });
  after(async () => {
    await endpoint.close();
    removeProject(project);
  });

  const COMPLETE = ['permitted', 'denied', 'older format'];
  const NEEDS_RECONCILIATION = ['provider 500', 'deadline', 'cancel', 'incomplete', 'tail'];

  it('--json: every run has its verdict, the flag and its record format', () => {
    const listing = JSON.parse(symbiInProcess(['audit', 'list', '--project', project, '--json']).stdout) as { runs: Listed[] };
    const byName = (name: string) => listing.runs.find((run) => run.run_id === runs[name]);
    assert.equal(listing.runs.length, COMPLETE.length + NEEDS_RECONCILIATION.length);
    for (const name of COMPLETE) {
      assert.equal(byName(name)?.verdict, 'complete', name);
      assert.equal(byName(name)?.requires_reconciliation, false, name);
    }
    for (const name of NEEDS_RECONCILIATION) {
      assert.equal(byName(name)?.verdict, 'requires_reconciliation', `${name}: ${JSON.stringify(byName(name))}`);
      assert.equal(byName(name)?.requires_reconciliation, true, name);
    }
    assert.equal(byName('older format')?.record_format, 'symbi-mcp-0.1');
    for (const name of ['permitted', 'denied', 'provider 500', 'deadline', 'cancel'])
      assert.equal(byName(name)?.record_format, 'symbiont-response-route', name);
    assert.equal(byName('denied')?.terminal_reason, 'MaxIterations');
    assert.equal(byName('deadline')?.terminal_reason, 'Timeout');
    assert.ok(Object.keys(byName('provider 500')?.terminal_reason as object).includes('Error'));
    assert.equal(byName('incomplete')?.terminal_reason, null);
  });

  it('the table flags every run needing reconciliation in its VERDICT column, and counts them', () => {
    const { stdout } = symbi(['audit', 'list', '--project', project]);
    const lines = stdout.split('\n');
    const header = lines.find((l) => l.startsWith('RUN ID'));
    assert.match(header ?? '', /OUTCOME\s+FORMAT\s+VERIFIES\s+VERDICT$/);
    const row = (name: string) => lines.find((l) => l.startsWith(runs[name]!)) ?? `(no row for ${name})`;
    for (const name of COMPLETE) assert.match(row(name), /\s{2}yes\s{2,}complete$/, name);
    for (const name of NEEDS_RECONCILIATION) assert.match(row(name), /\s{2}yes\s{2,}requires reconciliation$/, name);
    assert.match(row('older format'), /symbi-mcp-0\.1/);
    assert.match(stdout, new RegExp(`^${NEEDS_RECONCILIATION.length} run\\(s\\) require reconciliation`, 'm'));
  });

  it('--needs-attention keeps only the runs whose verdict is not complete, in the table and in JSON', () => {
    const { stdout } = symbiInProcess(['audit', 'list', '--project', project, '--needs-attention']);
    const shown = stdout
      .split('\n')
      .filter((l) => /^[0-9a-f]{8}-/.test(l))
      .map((l) => l.slice(0, 36));
    assert.deepEqual(shown.sort(), NEEDS_RECONCILIATION.map((n) => runs[n]!).sort());
    assert.match(stdout, /only those needing attention/);
    const listing = JSON.parse(symbiInProcess(['audit', 'list', '--project', project, '--needs-attention', '--json']).stdout) as { runs: Listed[] };
    assert.deepEqual(listing.runs.map((r) => r.run_id).sort(), NEEDS_RECONCILIATION.map((n) => runs[n]!).sort());
    assert.ok(listing.runs.every((r) => r.verdict !== 'complete' && r.requires_reconciliation === true));
  });
});

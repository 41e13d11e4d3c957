import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Command } from 'commander';
import { test } from 'node:test';
import { AGENT_DECLARED_NAME_MAX_BYTES } from '../../src/shared/limits.js';
import { registerAuditCommand } from '../../src/supervisor/commands/audit-command.js';
import { runCommandInProcess } from '../support/cli-in-process.js';
import { craftedProject, craftJournal, runEvents } from '../support/crafted-journal.js';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { waitForStderr } from '../support/server.js';
import { symbiBin } from '../support/server-entry.js';

// Issue 49, item 4: `audit list` widths bounded. One journal naming an agent of 1,000,000
// characters among 700 used to pad every row to that width (760 MB, then RangeError); cells are
// now cut with an ellipsis and --json keeps the whole name. The server refuses such a name at
// startup in the first place, with one line naming the limit: the session's operator log, served in
// process (test/support/in-process-server.ts); `symbi audit list` runs as a process for its table.

const JOURNALS = 700;
const HUGE_NAME = 'n'.repeat(1_000_000);

test('700 journals, one naming an agent of 1,000,000 characters: the table is bounded, --json keeps the name', (t) => {
  const { dir, governed, sign } = craftedProject(t, 'audit-list-widths-');
  const huge = crypto.randomUUID();
  fs.writeFileSync(path.join(governed, `${huge}.jsonl`), craftJournal(huge, runEvents(HUGE_NAME), sign), { mode: 0o600 });
  const ordinary = runEvents('declared');
  for (let i = 1; i < JOURNALS; i++) {
    const runId = crypto.randomUUID();
    fs.writeFileSync(path.join(governed, `${runId}.jsonl`), craftJournal(runId, ordinary, sign), { mode: 0o600 });
  }

  const r = spawnSync(process.execPath, [symbiBin, 'audit', 'list', '--project', dir], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.signal, null, 'finished by itself');
  assert.equal(r.status, 0, r.stderr.slice(0, 2000));
  assert.doesNotMatch(r.stderr, /RangeError|at .*\.js:\d+/);
  const rows = r.stdout.split('\n').filter((l) => /^[0-9a-f]{8}-/.test(l));
  assert.equal(rows.length, JOURNALS);
  const widest = Math.max(...r.stdout.split('\n').map((l) => [...l].length));
  // Eight columns of at most 48 characters and their separators; the note below the table is one line of its own.
  assert.ok(widest <= 8 * 48 + 7 * 2, `widest line: ${widest} characters`);
  const hugeRow = rows.find((l) => l.startsWith(huge)) ?? '';
  assert.match(hugeRow, /n{47}…/, 'the name is cut with an ellipsis');
  assert.ok(
    rows.every((l) => /\s{2}complete$/.test(l)),
    'every run verifies and is complete',
  );
  assert.ok(r.stdout.length < JOURNALS * 400, `stdout: ${r.stdout.length} bytes`);

  // --json in process, through the command's own definition (test/support/cli-in-process.ts): the
  // listing is the command's logic; the bounded table above is what the process shows.
  const program = new Command().exitOverride();
  registerAuditCommand(program);
  const json = runCommandInProcess(() => void program.parse(['audit', 'list', '--project', dir, '--json'], { from: 'user' }));
  assert.equal(json.code, 0, json.stderr.slice(0, 2000));
  const listing = JSON.parse(json.stdout) as { runs: { run_id: string; agent: string; record_format: string }[] };
  assert.equal(listing.runs.length, JOURNALS);
  assert.equal(listing.runs.find((run) => run.run_id === huge)?.agent, HUGE_NAME, '--json keeps the exact name');
  assert.ok(
    listing.runs.every((run) => run.record_format === 'symbi-mcp-0.1'),
    'the crafted journals are of the earlier format',
  );
});

test(`an agent name longer than ${AGENT_DECLARED_NAME_MAX_BYTES} bytes is refused at startup with one line; one at the limit is served`, async (t) => {
  const atLimit = 'a'.repeat(AGENT_DECLARED_NAME_MAX_BYTES);
  const project = makeProject({
    'agents/long.symbi': `agent ${'b'.repeat(1_000_000)} {}\n`,
    'agents/edge.symbi': `agent ${atLimit} {}\n`,
  });
  t.after(() => removeProject(project));
  const server = await startInProcessServer(project);
  try {
    const stderr = await waitForStderr(server, (text) => text.includes('agents/long.symbi'));
    const lines = stderr.split('\n').filter((l) => l.includes('agents/long.symbi'));
    assert.equal(lines.length, 1, stderr.slice(0, 4000));
    assert.match(lines[0]!, new RegExp(`the agent declared at 1:1 has a name of 1000000 bytes; the limit is ${AGENT_DECLARED_NAME_MAX_BYTES} bytes`));
    assert.ok(lines[0]!.length < 1000, `one short line (${lines[0]!.length} characters)`);
    assert.ok(stderr.length < 20_000, 'the name is not echoed');
    assert.match(stderr, /\(agents\/edge\.symbi\): invocable$/m, 'the name at the limit is accepted');
    assert.match(stderr, /agents: 2 found, 1 invocable/);
    const refused = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'long', prompt: 'hi' } });
    assert.equal(refused.isError, true, 'the refused agent cannot be invoked');
  } finally {
    await server.close();
  }
});

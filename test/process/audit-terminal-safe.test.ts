import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { craftedProject, craftJournal, runEvents } from '../support/crafted-journal.js';
import { symbiBin } from '../support/server-entry.js';

// `symbi audit list` shows names and texts that come from the project folder
// and from signed records. Written raw, "ESC[2J" in a journal's file name would
// clear the auditor's screen and a forged row could follow; a right-to-left
// override would reorder what the row shows. Every line for people escapes
// them; --json keeps the exact strings.

// C0 (except the newline), DEL, C1, and the bidirectional formatting characters.
// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const CLEAR_SCREEN = '\u001b[2J';
const AGENT_NAME = `evil${CLEAR_SCREEN}\u202edrow`;
const ERROR_TEXT = `boom\u001b]0;owned\u0007 \u009b31m\u2066x`;

function projectWithHostileNames(t: { after(fn: () => void): void }): string {
  const { dir, governed, sign } = craftedProject(t, 'audit-terminal-safe-');
  const named = crypto.randomUUID();
  fs.writeFileSync(path.join(governed, `${named}.jsonl`), craftJournal(named, runEvents(AGENT_NAME), sign));
  const failed = crypto.randomUUID();
  fs.writeFileSync(
    path.join(governed, `${failed}.jsonl`),
    craftJournal(failed, runEvents('declared', `{"Error":{"message":${JSON.stringify(ERROR_TEXT)}}}`), sign),
  );
  fs.writeFileSync(path.join(governed, `${CLEAR_SCREEN}verifies: yes.jsonl`), '');
  return dir;
}

test('audit list escapes control and bidirectional characters from file names and signed strings', (t) => {
  const project = projectWithHostileNames(t);
  const r = spawnSync(process.execPath, [symbiBin, 'audit', 'list', '--project', project], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, UNSAFE, `stdout: ${JSON.stringify(r.stdout)}`);
  assert.doesNotMatch(r.stderr, UNSAFE, `stderr: ${JSON.stringify(r.stderr)}`);
  assert.ok(r.stdout.includes('evil\\u001b[2J\\u202edrow'), r.stdout);
  assert.ok(r.stdout.includes('error: boom\\u001b]0;owned\\u0007 \\u009b31m\\u2066x'), r.stdout);
  assert.ok(r.stderr.includes('\\u001b[2Jverifies: yes.jsonl: not named <run id>.jsonl; skipped'), r.stderr);
});

test('audit list --json keeps the exact strings', (t) => {
  const project = projectWithHostileNames(t);
  const r = spawnSync(process.execPath, [symbiBin, 'audit', 'list', '--project', project, '--json'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  const listing = JSON.parse(r.stdout) as { runs: { agent: string | null; outcome: string; verifies: boolean }[] };
  assert.ok(listing.runs.every((run) => run.verifies));
  assert.ok(listing.runs.some((run) => run.agent === AGENT_NAME));
  assert.ok(listing.runs.some((run) => run.outcome.startsWith(`error: ${ERROR_TEXT.replace(/\s+/g, ' ')}`.slice(0, 60))));
});

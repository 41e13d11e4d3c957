import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { repoRoot } from '../support/server-entry.js';

// The first thing a new user does: clone, then `npm run demo`. The clone holds committed files only
// (no node_modules/, no dist/), so the demo's own install and build steps run here.

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function childEnv(tmp: string): Record<string, string> {
  // No provider keys and no npm lifecycle variables from an enclosing `npm test`; only what npm needs.
  const env: Record<string, string> = {
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? os.tmpdir(),
    // Reuse the local npm cache so CI time stays sane; the demo still runs its own `npm ci`.
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    NO_COLOR: '1',
    // A temporary folder of its own, to see that the demo leaves no copy of the example in it.
    TMPDIR: tmp,
  };
  if (process.env.npm_config_cache !== undefined) env.npm_config_cache = process.env.npm_config_cache;
  return env;
}

function runDemo(cwd: string, tmp: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(npm, ['run', 'demo'], { cwd, env: childEnv(tmp), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run demo from a fresh clone', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-clone-'));

  after(() => {
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('installs, builds, and walks through an answer, a refusal, a cancellation and complete journals', { timeout: 300_000 }, async () => {
    const clone = path.join(scratch, 'symbi-mcp');
    const cloned = spawnSync('git', ['clone', '-q', repoRoot, clone], { encoding: 'utf8' });
    assert.equal(cloned.status, 0, `git clone failed: ${cloned.stderr}`);
    assert.ok(!fs.existsSync(path.join(clone, 'node_modules')), 'the clone starts without node_modules/');
    assert.ok(!fs.existsSync(path.join(clone, 'dist')), 'the clone starts without dist/');

    const tmp = path.join(scratch, 'tmp');
    fs.mkdirSync(tmp);
    const { code, stdout, stderr } = await runDemo(clone, tmp);
    const shown = `--- stdout ---\n${stdout.slice(-6000)}\n--- stderr ---\n${stderr.slice(-3000)}`;
    assert.equal(code, 0, `the demo exits 0\n${shown}`);

    assert.match(stdout, /demo: installing dependencies \(npm (ci|install)\)/, 'the demo ran its own install step');
    assert.ok(fs.existsSync(path.join(clone, 'bundle', 'supervisor', 'cli.js')), 'the package was built');

    // An answer and its audit reference.
    assert.match(stdout, /answer\s+Hello from the synthetic endpoint\./, shown);
    const runId = /run id\s+([0-9a-f-]{36})/.exec(stdout)?.[1];
    assert.ok(runId, `a run id is printed\n${shown}`);
    const journal = /journal\s+(\/\S+\.jsonl)/.exec(stdout)?.[1];
    assert.ok(journal, 'a journal path is printed');
    assert.equal(path.basename(journal, '.jsonl').split('.').at(-1), runId);
    assert.match(stdout, /public key\s+[0-9a-f]{64}/);

    // The refusal reason for the non-conversational agent, the Cedar refusal and the cancellation.
    assert.match(stdout, /not invocable\s+pipeline/);
    assert.match(stdout, /with` block with statements/);
    assert.match(stdout, /tool error\s+invoke_agent failed: Cedar policy denied the response/);
    assert.match(stdout, /the call was cancelled/);

    // `symbi audit inspect` on each journal: the answer and the refusal complete; the cancelled run's
    // journal is complete too, but its provider call's effect is unknown, so it needs reconciliation.
    const verdicts = [...stdout.matchAll(/^\s+(answer|refusal|cancelled)\s+([0-9a-f-]{36})\s+(complete|requires reconciliation|failed)\s/gm)];
    assert.deepEqual(
      verdicts.map((m) => [m[1], m[3]]),
      [
        ['answer', 'complete'],
        ['refusal', 'complete'],
        ['cancelled', 'requires reconciliation'],
      ],
      shown,
    );
    assert.equal(verdicts[0]![2], runId);
    assert.match(stdout, /cancelled\s+[0-9a-f-]{36}\s+requires reconciliation\s+exit 2, \d+ records, journal complete/);
    assert.match(stdout, /What to run next/);
    assert.match(stdout, /every step behaved as expected/);
    assert.match(stdout, /The copy of the example was removed; `npm run demo -- --keep` keeps it/);
    assert.deepEqual(
      fs.readdirSync(tmp).filter((n) => n.startsWith('symbi-demo-')),
      [],
      'no copy left in the temporary folder',
    );

    // The example in the clone is untouched: the demo served a copy.
    assert.ok(!fs.existsSync(path.join(clone, 'examples', 'quickstart', '.symbiont')));
  });
});

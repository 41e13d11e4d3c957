import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { makeProject, removeProject } from '../support/project.js';
import { startServer, textOf } from '../support/server.js';
import { leftOutOf } from '../support/confinement-reruns.js';

// Race: another process keeps swapping a path component between a real
// directory (or file) and a symlink to a secret outside the project while the
// server reads through it READS times. The secret must never appear.

const MARKER = 'RACE-SECRET-51c0de';
const BENIGN = 'agent benign {\n}\n';
// test/process/confinement-routes.test.ts runs this suite once per route with fewer reads.
const READS = Number(process.env.CONFINEMENT_RACE_READS ?? 10_000);
const BATCH = 50;

// Runs in its own process: tight loop of renames and symlinks, counting swaps until SIGTERM.
const SWAPPER = `
const fs = require('node:fs');
const [project, secretDir, secretFile] = process.argv.slice(1);
const race = project + '/race', raceReal = project + '/race.real';
const fin = project + '/final/a.symbi', finReal = project + '/final/a.real';
let swaps = 0;
process.on('SIGTERM', () => { process.stdout.write(String(swaps)); process.exit(0); });
const deadline = Date.now() + 120000;
function step(fn) { try { fn(); } catch {} }
(function loop() {
  for (let i = 0; i < 200; i++) {
    step(() => fs.renameSync(race, raceReal));
    step(() => fs.symlinkSync(secretDir, race));
    step(() => fs.renameSync(fin, finReal));
    step(() => fs.symlinkSync(secretFile, fin));
    step(() => fs.unlinkSync(race));
    step(() => fs.renameSync(raceReal, race));
    step(() => fs.unlinkSync(fin));
    step(() => fs.renameSync(finReal, fin));
    swaps++;
  }
  if (Date.now() < deadline) setImmediate(loop);
})();
`;

describe('confinement race', () => {
  it(
    `never returns the secret across ${READS} reads while a component is swapped`,
    { skip: leftOutOf(['no-proc'], 'the route opens each component without /proc either way') },
    async () => {
      const outside = makeProject(
        { 'secret/a.symbi': `agent leaked {\n}\n// ${MARKER}\n`, 'secret.symbi': `agent leaked {\n}\n// ${MARKER}\n` },
        'symbi-race-outside-',
      );
      const project = makeProject({ 'race/a.symbi': BENIGN, 'final/a.symbi': BENIGN, 'agents/ok.symbi': BENIGN });
      const server = await startServer(project);
      const swapper = spawn(process.execPath, ['-e', SWAPPER, project, path.join(outside, 'secret'), path.join(outside, 'secret.symbi')], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let swapOutput = '';
      swapper.stdout.on('data', (c: Buffer) => (swapOutput += c.toString()));
      const swapperDone = new Promise<void>((resolve) => swapper.on('exit', () => resolve()));
      let ok = 0;
      let refused = 0;
      try {
        for (let start = 0; start < READS; start += BATCH) {
          const batch = [];
          for (let i = start; i < Math.min(READS, start + BATCH); i++) {
            batch.push(server.call('parse_dsl', { file: i % 2 === 0 ? 'race/a.symbi' : 'final/a.symbi' }));
          }
          for (const result of await Promise.all(batch)) {
            const serialised = JSON.stringify(result);
            assert.ok(!serialised.includes(MARKER), `secret leaked: ${serialised.slice(0, 200)}`);
            assert.ok(!serialised.includes('leaked'), 'the secret agent name never appears');
            if (result.isError) refused++;
            else {
              ok++;
              assert.deepEqual(
                (result.structuredContent as { agents: Array<{ name: string }> }).agents.map((a) => a.name),
                ['benign'],
              );
            }
          }
        }
      } finally {
        swapper.kill('SIGTERM');
        await swapperDone;
        const health = await server.call('get_agent_dsl', { agent: 'ok' });
        assert.equal(textOf(health), BENIGN);
        await server.close();
        removeProject(project);
        removeProject(outside);
      }
      assert.equal(ok + refused, READS);
      assert.ok(Number(swapOutput) > 0, 'the swapper ran');
      // For the record: how often the read met the symlink or a missing component.
      process.stderr.write(`race: ${ok} clean reads, ${refused} refusals, ${swapOutput} swap cycles\n`);
    },
  );
});

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { TEST_ONLY_SETTINGS } from '../../src/shared/test-switches.js';
import { repoRoot, symbiBin } from '../support/server-entry.js';

// The test suite's own settings (src/shared/test-switches.ts) never reach a user: the bundle that
// bin/symbi.js runs (the clone's, or the installed package's under SYMBI_TEST_SERVER_ENTRY) holds no
// fault injection code and refuses either setting at startup in one line; the build in dist/, which
// the tests that use them start, honours them.

const bundleDir = path.join(path.dirname(symbiBin), '..', 'bundle');

function bundleFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return bundleFiles(full);
    return entry.name.endsWith('.js') ? [full] : [];
  });
}

function runVersion(entry: string, env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [entry, '--version'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('test-only settings and the shipped bundle', () => {
  it('the bundle holds no fault injection module and none of its modes', () => {
    const files = bundleFiles(bundleDir);
    assert.ok(files.length > 0, `no bundle in ${bundleDir}`);
    assert.ok(!files.some((file) => path.basename(file) === 'fault-injection.js'), 'bundle/ holds fault-injection.js');
    const source = fs.readFileSync(path.join(repoRoot, 'src', 'worker', 'fault-injection.ts'), 'utf8');
    const modes = [...source.matchAll(/mode === '([a-z-]+)'/g)].map((match) => match[1]!);
    assert.ok(modes.length >= 3, 'the fault modes were not found in src/worker/fault-injection.ts');
    for (const file of files) {
      const text = fs.readFileSync(file, 'utf8');
      for (const mode of modes) assert.ok(!text.includes(mode), `${path.relative(bundleDir, file)} holds the fault mode ${mode}`);
    }
  });

  for (const setting of TEST_ONLY_SETTINGS) {
    it(`the bundle refuses ${setting} at startup in one line; dist/ honours it`, () => {
      const refused = runVersion(symbiBin, { [setting]: '{}' });
      assert.equal(refused.status, 2, refused.stderr);
      assert.equal(refused.stdout, '');
      assert.equal(refused.stderr, `symbi: ${setting} is a test-only setting of a development build (dist/), not of the installed package; unset it\n`);
      const honoured = runVersion(path.join(repoRoot, 'dist', 'supervisor', 'cli.js'), { [setting]: '{}' });
      assert.equal(honoured.status, 0, honoured.stderr);
    });
  }

  it('names both settings when both are set', () => {
    const refused = runVersion(symbiBin, Object.fromEntries(TEST_ONLY_SETTINGS.map((name) => [name, 'x'])));
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /^symbi: SYMBI_FAULT_INJECTION and SYMBI_CONFINEMENT_TEST_CONSTANTS are test-only settings .*; unset them\n$/);
  });
});

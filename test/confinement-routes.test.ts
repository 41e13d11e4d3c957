import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ROUTE_NAMES, type RouteName } from '../src/shared/confinement/descriptor-route.js';
import { checkDescriptorAccess } from '../src/shared/confinement/route-choice.js';
import { repoRoot } from './support/server-entry.js';
import { namespaceSkip } from './support/mount-namespace.js';

// The confinement attacks, the symlink-swap race and the storage attacks, run
// once per route with SYMBI_CONFINEMENT_ROUTE forcing it (the servers those
// suites start inherit it; test/support/server.ts serverEnv). The fail-closed
// tests per route are in descriptor-access.test.ts. A route this machine
// cannot prove is skipped by name, with the self-test's reason.

const SUITES = ['test/confinement-attacks.test.ts', 'test/confinement-race.test.ts', 'test/audit-storage.test.ts'];
const RACE_READS = '1500';

/** Runs the suites in a child test runner under `route`, with no /proc when `withoutProc`; asserts all passed, none skipped. */
function runSuites(route: RouteName, withoutProc: boolean): void {
  // Without NODE_TEST_CONTEXT the child runner reports on its own standard output, not to this runner.
  const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
  const runner = [process.execPath, '--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=1', ...SUITES];
  const [command, ...args] = withoutProc ? ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"', ...runner] : runner;
  const run = spawnSync(command!, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...env, SYMBI_CONFINEMENT_ROUTE: route, CONFINEMENT_RACE_READS: RACE_READS },
    maxBuffer: 64 * 1024 * 1024,
  });
  const summary = run.stdout.split('\n').filter((l) => /^# (tests|pass|fail|skipped)/.test(l));
  assert.equal(run.status, 0, `${route}:\n${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
  assert.match(summary.join('\n'), /# fail 0/);
  assert.match(summary.join('\n'), /# skipped 0/, 'no part of the suites was skipped under this route');
}

describe('confinement suites once per route', () => {
  for (const route of ROUTE_NAMES) {
    const access = checkDescriptorAccess({ SYMBI_CONFINEMENT_ROUTE: route });
    const skip = access.available ? undefined : `route ${route} is not available on this machine: ${access.reason}`;
    it(`route ${route}: attacks, race (${RACE_READS} reads) and storage attacks pass`, { skip }, () => runSuites(route, false));
  }
});

// The same suites with the test runner and every server it starts in a
// private mount namespace whose /proc is an empty tmpfs: the routes that do
// not need /proc must refuse every attack there too.
describe('confinement suites without /proc', { skip: namespaceSkip() }, () => {
  for (const route of ROUTE_NAMES.filter((name) => name !== 'proc')) {
    const access = checkDescriptorAccess({ SYMBI_CONFINEMENT_ROUTE: route });
    const skip = access.available ? undefined : `route ${route} is not available on this machine: ${access.reason}`;
    it(`route ${route} with no /proc: attacks, race (${RACE_READS} reads) and storage attacks pass`, { skip }, () => runSuites(route, true));
  }
});

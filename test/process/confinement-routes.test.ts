import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROUTE_NAMES, type RouteName } from '../../src/shared/confinement/descriptor-route.js';
import { checkDescriptorAccess } from '../../src/shared/confinement/route-choice.js';
import { repoRoot } from '../support/server-entry.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { PLAIN_RUN_ONLY, type ConfinementRerun } from '../support/confinement-reruns.js';
import { routeSkip } from '../support/route-required.js';

// The confinement attacks, the symlink-swap race and the storage attacks, run
// once per route with SYMBI_CONFINEMENT_ROUTE forcing it (the servers those
// suites start, and the sessions they serve in process, are given it:
// test/support/server.ts serverEnv). The fail-closed
// tests per route are in descriptor-access.test.ts. A route this machine
// cannot prove is skipped by name, with the self-test's reason, unless
// SYMBI_TEST_REQUIRED_ROUTES names it (test/support/route-required.ts).
//
// Only what depends on the route is run again (test/support/confinement-reruns.ts):
// - the route the plain run of the suites chose on this machine is not forced
//   again: the plain run (with the full race) already ran every test under it;
// - the retained-bytes limit counts what was read, whichever route read it, so
//   it runs in the plain run only;
// - without /proc, every route left opens and lists a project exactly as with
//   it; what /proc changes is the server's start (its route proof, never
//   remembered without /proc, and self-test) and where a reserved journal file
//   gets its name. So the runs without /proc keep the storage suite and the
//   attacks on one server, and leave the race and the other discovery servers
//   to the runs with /proc. descriptor-access.test.ts serves, invokes and
//   writes journals without /proc on each of these routes as well.

const SUITES = ['confinement-attacks.test', 'confinement-race.test', '../unit/audit-storage.test'];
const RACE_READS = '1500';

// Each rerun is one process that loads the three suites and runs them one after another (node:test
// runs the top-level tests of one process in order), not a test runner that starts a process per
// file. Run compiled (`npm test` runs .test-build/), it loads the suites compiled beside this file,
// with no TypeScript loader; run from its TypeScript, it loads theirs through tsx. The route is forced
// in the environment of that process, so every server it starts and its own storage calls take it.
const compiled = import.meta.url.endsWith('.js');
const extension = compiled ? 'js' : 'ts';
const entry = fileURLToPath(new URL(`../support/confinement-rerun-entry.${extension}`, import.meta.url));
const suiteUrls = SUITES.map((suite) => new URL(`${suite}.${extension}`, import.meta.url).href);

/** Runs the suites in a child process under `route`, with no /proc when `withoutProc`; asserts all passed, none skipped but what the rerun leaves out. */
function runSuites(route: RouteName, withoutProc: boolean): void {
  // Without NODE_TEST_CONTEXT the child reports on its own standard output, not to this runner.
  const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
  const rerun: ConfinementRerun = withoutProc ? 'no-proc' : 'route';
  const loader = compiled ? [] : ['--import', 'tsx'];
  const runner = [process.execPath, ...loader, '--test-reporter=tap', entry, ...suiteUrls];
  const [command, ...args] = withoutProc ? ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"', ...runner] : runner;
  const run = spawnSync(command!, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...env, SYMBI_CONFINEMENT_ROUTE: route, CONFINEMENT_RACE_READS: RACE_READS, CONFINEMENT_RERUN: rerun },
    maxBuffer: 64 * 1024 * 1024,
  });
  const summary = run.stdout.split('\n').filter((l) => /^# (tests|pass|fail|skipped)/.test(l));
  assert.equal(run.status, 0, `${route}:\n${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
  assert.match(summary.join('\n'), /# fail 0/);
  assert.doesNotMatch(summary.join('\n'), /# pass 0$/m, 'tests ran');
  const skipped = run.stdout.split('\n').filter((l) => /^\s*ok \d+ - .* # SKIP/.test(l));
  for (const line of skipped)
    assert.ok(line.includes(`# SKIP ${PLAIN_RUN_ONLY}`), `no part of the suites was skipped under this route but what the rerun leaves out: ${line}`);
}

/** Why the run of `route` is skipped on this machine (or fails, when the route is required), or undefined. */
function rerunSkip(route: RouteName, plainRoute: RouteName | undefined): string | undefined {
  const unavailable = routeSkip(route);
  if (unavailable !== undefined) return unavailable;
  if (route === plainRoute) return `route ${route} is the one the plain run of the suites chose on this machine: they ran under it in full`;
  return undefined;
}

describe('confinement suites once per route', () => {
  // The route this test runner's process, like each server the plain run started, chose by itself.
  const plain = checkDescriptorAccess();
  for (const route of ROUTE_NAMES) {
    it(
      `route ${route}: attacks, race (${RACE_READS} reads) and storage attacks pass`,
      { skip: rerunSkip(route, plain.available ? plain.route.name : undefined) },
      () => runSuites(route, false),
    );
  }
});

// The same suites with the process that runs them and every server it starts in a
// private mount namespace whose /proc is an empty tmpfs: the routes that do
// not need /proc must refuse every attack there too.
describe('confinement suites without /proc', { skip: namespaceSkip() }, () => {
  for (const route of ROUTE_NAMES.filter((name) => name !== 'proc')) {
    it(`route ${route} with no /proc: attacks and storage attacks pass`, { skip: rerunSkip(route, undefined) }, () => runSuites(route, true));
  }
});

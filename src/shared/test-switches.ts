// The settings only the test suite sets: they make a worker thread misbehave on purpose
// (SYMBI_FAULT_INJECTION, src/worker/fault-injection.ts) or give the confinement self-test wrong
// constants (SYMBI_CONFINEMENT_TEST_CONSTANTS, src/shared/confinement/open-flags.ts). The build in
// dist/, which the tests start, honours them. The bundle a user installs does not: its build
// (scripts/build-bundle.ts) defines SYMBI_SHIPPED_BUNDLE, leaves the fault injection module out, and
// the command line refuses either setting at startup, in one line (cli.ts).

/** Defined (as `true`) only in the shipped bundle, by esbuild; no such name exists in dist/. */
declare const SYMBI_SHIPPED_BUNDLE: boolean | undefined;

export const TEST_ONLY_SETTINGS = ['SYMBI_FAULT_INJECTION', 'SYMBI_CONFINEMENT_TEST_CONSTANTS'] as const;

/** Whether this build honours the test-only settings: in dist/, yes; in the shipped bundle, never. */
export const TEST_SWITCHES_HONOURED: boolean = typeof SYMBI_SHIPPED_BUNDLE === 'undefined';

/** The one-line refusal when a build that does not honour them finds a test-only setting; undefined otherwise. */
export function testSwitchRefusal(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (TEST_SWITCHES_HONOURED) return undefined;
  const set = TEST_ONLY_SETTINGS.filter((name) => env[name] !== undefined && env[name] !== '');
  if (set.length === 0) return undefined;
  const named = set.join(' and ');
  return `${named} ${set.length === 1 ? 'is a test-only setting' : 'are test-only settings'} of a development build (dist/), not of the installed package; unset ${set.length === 1 ? 'it' : 'them'}`;
}

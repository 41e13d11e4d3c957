// test/process/confinement-routes.test.ts reruns the confinement suites (confinement-attacks,
// confinement-race, audit-storage) under each forced route (CONFINEMENT_RERUN=route), and in a
// mount namespace whose /proc is empty under each route that does not need /proc
// (CONFINEMENT_RERUN=no-proc). A test whose behaviour does not change with what a rerun varies
// runs in the plain run only: `leftOutOf` is its skip reason in those reruns, and
// confinement-routes accepts no skip but these.

export type ConfinementRerun = 'route' | 'no-proc';

/** How every skip reason given by leftOutOf starts. */
export const PLAIN_RUN_ONLY = 'runs in the plain run only:';

/** The skip reason for a test in the reruns named (`why`: what the rerun varies does not reach it), else undefined. */
export function leftOutOf(reruns: readonly ConfinementRerun[], why: string): string | undefined {
  const current = process.env.CONFINEMENT_RERUN;
  return reruns.some((rerun) => rerun === current) ? `${PLAIN_RUN_ONLY} ${why}` : undefined;
}

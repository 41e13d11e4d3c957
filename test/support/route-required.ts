import { checkDescriptorAccess } from '../../src/shared/confinement/route-choice.js';
import { ROUTE_NAMES } from '../../src/shared/confinement/descriptor-route.js';
import type { RouteName } from '../../src/shared/confinement/index.js';

// A test that needs one confinement route skips, with the reason, where that
// route cannot be proven: openat2 and /proc exist only on Linux. Where a route
// must work (the libc walk on macOS and FreeBSD in CI), a skip would hide the
// regression it stands for, so SYMBI_TEST_REQUIRED_ROUTES names the routes
// that must be available ("libc", "openat2,libc,proc"), and a required route
// that fails its proof fails the suite instead.

export const REQUIRED_ROUTES_ENV = 'SYMBI_TEST_REQUIRED_ROUTES';
/**
 * The ACL reader's proof (src/shared/storage/directory-acl.ts), which REQUIRED_ROUTES_ENV may name beside
 * the routes: where it is required, its controls must have run (test/process/acl-proof-controls.test.ts).
 */
export const ACL_PROOF = 'acl';
const REQUIRABLE: readonly string[] = [...ROUTE_NAMES, ACL_PROOF];

/** The routes (and `acl`) REQUIRED_ROUTES_ENV names; throws on a name that is neither, so a typo cannot turn the check off. */
function requiredRoutes(env: NodeJS.ProcessEnv): Array<RouteName | typeof ACL_PROOF> {
  const value = env[REQUIRED_ROUTES_ENV] ?? '';
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !REQUIRABLE.includes(name));
  if (unknown.length > 0)
    throw new Error(`${REQUIRED_ROUTES_ENV}=${value}: ${unknown.join(', ')} is not a route; use a comma-separated list of ${REQUIRABLE.join(', ')}`);
  return names as Array<RouteName | typeof ACL_PROOF>;
}

/** Whether REQUIRED_ROUTES_ENV requires the ACL proof to run its controls here. */
export function aclProofRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return requiredRoutes(env).includes(ACL_PROOF);
}

/**
 * Why tests of `route` cannot run here, or undefined when they can. Throws
 * instead of returning a reason when REQUIRED_ROUTES_ENV names the route: called
 * while a suite is declared, that fails the suite with the route's failed check.
 */
export function routeSkip(route: RouteName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const required = requiredRoutes(env);
  const access = checkDescriptorAccess({ SYMBI_CONFINEMENT_ROUTE: route });
  if (access.available) return undefined;
  const reason = `route ${route} is not available on this machine: ${access.reason}`;
  if (required.includes(route)) throw new Error(`${reason}; ${REQUIRED_ROUTES_ENV} requires it, so this fails instead of skipping`);
  return reason;
}

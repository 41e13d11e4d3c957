import { ROUTE_NAMES, type DescriptorRoute, type RouteName } from './descriptor-route.js';
import { testConstantOverrides, TEST_CONSTANTS_ENV, type OverridableConstant } from './open-flags.js';
import { projectProbeMemory } from './proof-cache.js';
import { proveInChild } from './route-proof.js';
import { probeProjectFileSystem, selfTestRoute } from './route-self-test.js';
import { platformLabel, ROUTE_ENV, routeByName, type DescriptorAccess } from './routes.js';

// Which confinement route reaches project files, decided once at startup. Each
// candidate is built and proven by the self-test (route-self-test.ts) before it
// serves; the first that passes is used. Where none passes, every project file
// operation refuses with one line naming the platform and the failed checks,
// instead of reporting files absent (an agents/ folder "missing", no policy
// files and so the default permission).
//
// Order on Linux: openat2, then the libc walk, then /proc, fastest first as
// measured by scripts/bench/bench-confinement.ts. macOS and FreeBSD have only the
// libc walk (FreeBSD's O_RESOLVE_BENEATH still follows symlinks inside the tree).

const CANDIDATES: Readonly<Record<string, readonly RouteName[]>> = {
  linux: ['openat2', 'libc', 'proc'],
  darwin: ['libc'],
  freebsd: ['libc'],
};

/** Picks and proves the route for this process (see the top of this file); `env` may force one or, for tests, bend constants. */
export function checkDescriptorAccess(
  env: NodeJS.ProcessEnv = process.env,
  platform: string = process.platform,
  project?: { readonly fd: number; readonly path: string },
): DescriptorAccess {
  const label = platformLabel(platform);
  const refuse = (detail: string): DescriptorAccess => ({
    available: false,
    reason: `project file confinement cannot be proven on this ${label} system: ${detail}`,
  });
  const forced = env[ROUTE_ENV];
  if (forced !== undefined && forced !== '' && !(ROUTE_NAMES as readonly string[]).includes(forced)) {
    return refuse(`${ROUTE_ENV}=${JSON.stringify(forced).slice(0, 40)} is not a route; use one of ${ROUTE_NAMES.join(', ')}`);
  }
  const candidates = CANDIDATES[platform];
  if (candidates === undefined) return refuse('it requires Unix (Linux, macOS or FreeBSD); under Windows, run it in WSL, which is Linux');
  let overrides: Partial<Record<OverridableConstant, number>>;
  try {
    overrides = testConstantOverrides(env);
  } catch (err) {
    return refuse((err as Error).message);
  }
  const tried = forced ? [forced as RouteName] : candidates;
  const failures: string[] = [];
  for (const name of tried) {
    // An FFI route is proven in a child process before this process calls into it (route-proof.ts).
    let proven = '';
    if (name !== 'proc') {
      const proof = proveInChild(name, { ...process.env, ...env }, overrides);
      if (!proof.ok) {
        failures.push(`route ${name} ${proof.reason}`);
        continue;
      }
      proven = `; ${proof.note}`;
    }
    let route: DescriptorRoute;
    try {
      route = routeByName(name, overrides);
    } catch (err) {
      failures.push(`route ${name} cannot be used: ${(err as Error).message}`);
      continue;
    }
    let provenDevice: number;
    try {
      provenDevice = selfTestRoute(route);
    } catch (err) {
      failures.push(`route ${name} failed its self-test: ${(err as Error).message}`);
      continue;
    }
    if (project !== undefined) {
      try {
        const memory = Object.keys(overrides).length > 0 ? undefined : projectProbeMemory(name, { ...process.env, ...env });
        const skipped = probeProjectFileSystem(route, project.fd, project.path, provenDevice, memory);
        proven += skipped === undefined ? '; proven on the project file system too' : `; ${skipped}`;
      } catch (err) {
        failures.push(`route ${name} failed its self-test: ${(err as Error).message}`);
        continue;
      }
    }
    const bent = Object.keys(overrides).length > 0 ? ` (${TEST_CONSTANTS_ENV} is set)` : '';
    const why = forced ? `forced by ${ROUTE_ENV}${bent}` : `the fastest route that passed the startup self-test on ${label}${bent}`;
    return { available: true, route, why: `${why}${proven}${failures.length > 0 ? `; ${failures.join('; ')}` : ''}` };
  }
  return refuse(failures.join('; '));
}

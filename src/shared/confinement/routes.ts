import { ROUTE_NAMES, type DescriptorRoute, type RouteName } from './descriptor-route.js';
import { createLibcRoute } from './libc-route.js';
import { openFlags, type OverridableConstant } from './open-flags.js';
import { createProcRoute } from './proc-route.js';

// The routes by name, and how a refusal names the system: what both the
// startup choice (route-choice.ts) and a worker thread given a chosen route need.

export type DescriptorAccess =
  | { readonly available: true; readonly route: DescriptorRoute; readonly why: string }
  | { readonly available: false; readonly reason: string };

/** Set to openat2, libc or proc to use only that route (tests, and operators comparing routes). */
export const ROUTE_ENV = 'SYMBI_CONFINEMENT_ROUTE';

const PLATFORM_NAMES: Readonly<Record<string, string>> = {
  linux: 'Linux',
  darwin: 'macOS',
  win32: 'Windows',
  freebsd: 'FreeBSD',
  openbsd: 'OpenBSD',
  netbsd: 'NetBSD',
  sunos: 'SunOS',
  aix: 'AIX',
};

/** "Linux x64", "macOS arm64": how messages name this system. */
export function platformLabel(platform: string = process.platform, arch: string = process.arch): string {
  return `${PLATFORM_NAMES[platform] ?? platform} ${arch}`;
}

/** The one-line refusal every project file operation gives when access is unavailable. */
export function projectFilesUnavailable(reason: string): string {
  return `project files are unavailable: ${reason}`;
}

/** Builds the named route without proving it (worker threads use the route their supervisor proved). */
export function routeByName(name: RouteName, overrides: Partial<Record<OverridableConstant, number>> = {}): DescriptorRoute {
  if (name === 'proc') return createProcRoute(openFlags(process.platform, overrides));
  if (name === 'libc' || name === 'openat2') return createLibcRoute({ openat2: name === 'openat2', overrides });
  throw new Error(`${JSON.stringify(String(name)).slice(0, 40)} is not a confinement route; use one of ${ROUTE_NAMES.join(', ')}`);
}

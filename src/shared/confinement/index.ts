import fs from 'node:fs';
import path from 'node:path';
import { PinnedDirectory } from './pinned-directory.js';
import { checkDescriptorAccess } from './route-choice.js';

// The one entry to project file confinement. Layers, each importing only those
// below it: the routes (open-flags, descriptor-route, proc-route, libc-route,
// routes), the path rules (path-rules), the pinned directory that walks with a
// route (pinned-directory), the self-test that proves a route by walking with
// it (route-self-test), and the startup choice of a route (route-choice).

// Only what code outside the folder uses is re-exported here; tests that exercise an inner layer
// import it from its own module.
export { ConfinementError, decodeUtf8Strict, projectPathComponents } from './path-rules.js';
export { entryIdentityAt, fileFlags, hardLinkProblem, PinnedDirectory, readTextFileAt } from './pinned-directory.js';
export { type DescriptorAccess, projectFilesUnavailable } from './routes.js';
export { ReservedDirectoriesError } from './reserved-directories.js';
export { proveInChild, proveRouteHere, ROUTE_PROOF_COMMAND } from './route-proof.js';
export type { ProofSubject } from './proof-cache.js';
export { loadKoffi } from './libc-route.js';
export type { DescriptorRoute, RouteName } from './descriptor-route.js';
export { errnoError } from './descriptor-route.js';

/** Opens `dir` as the project root and proves a confinement route for it (route-choice.ts). */
export function pinProject(dir: string, env: NodeJS.ProcessEnv = process.env): PinnedDirectory {
  const absolute = path.resolve(dir);
  const fd = fs.openSync(absolute, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  let shown = absolute;
  try {
    shown = fs.realpathSync(absolute);
  } catch {
    // keep the resolved path
  }
  const project = PinnedDirectory.withAccess(fd, shown, checkDescriptorAccess(env, process.platform, { fd, path: shown }));
  project.recordReservedDirectories();
  return project;
}

import fs from 'node:fs';
import path from 'node:path';

// A server started where there is no agents/ (often a project's own agents/ folder, or a
// subfolder) says where the project probably is: the nearest folder above with an agents/
// directory. It looks no higher than the home directory or a repository root (a folder holding
// .git), so it never names a stranger's project. These are plain look-ups outside the pinned
// project, for a hint on standard error only: nothing is read from them.

/** How many folders up the look goes at most, whatever the bounds. */
const LEVELS_MAX = 32;

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function exists(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** The nearest folder above `dir` with an agents/ directory, and the last folder looked at. */
function nearestProjectAbove(dir: string, home = process.env.HOME): { project?: string; lookedUpTo: string } {
  const homeDir = home !== undefined && home !== '' ? path.resolve(home) : undefined;
  let current = path.resolve(dir);
  // Already at a bound: nothing above is looked at.
  if (current === homeDir || exists(path.join(current, '.git'))) return { lookedUpTo: current };
  for (let level = 0; level < LEVELS_MAX; level += 1) {
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
    if (isDirectory(path.join(current, 'agents'))) return { project: current, lookedUpTo: current };
    if (current === homeDir || exists(path.join(current, '.git'))) break;
  }
  return { lookedUpTo: current };
}

/** The one line that says a folder has no agents/, and where the project above is (or that there is none). */
export function noAgentsFolderMessage(dir: string): string {
  const { project, lookedUpTo } = nearestProjectAbove(dir);
  if (project !== undefined) return `no agents/ in ${dir}; the nearest project above is ${project}: start with --project ${project}`;
  const above = lookedUpTo === path.resolve(dir) ? '' : `; no folder above it up to ${lookedUpTo} has one either`;
  return `no agents/ in ${dir}${above}: no agents to list or invoke (a project keeps its agent sources in agents/*.symbi or *.dsl)`;
}

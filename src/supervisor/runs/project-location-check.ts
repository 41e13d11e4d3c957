import fs from 'node:fs';
import type { OperatorLog } from '../operator/operator-log.js';
import { refusalText, type CallRefusal } from './agent-refusal.js';

// An invocation hands back an audit reference whose `path` is built from the
// project's path at startup, while its journal is written through the project
// directory pinned then. Once that path leads elsewhere (the folder renamed and
// another made in its place, a bind mount lazily unmounted), the reference
// would name a journal that is not there. So before each run the path must
// still resolve to the pinned directory: the same device and inode, which a
// new folder of the same name cannot have (identity over spelling).

/** The path shown to callers leads elsewhere now: it is gone, or another directory took its name. */
export type ProjectMoved = Extract<CallRefusal, { kind: 'project_moved' }>;

export interface ProjectLocation {
  /** Why the path shown to callers no longer leads to the pinned project, or undefined when it does. */
  problem(): ProjectMoved | undefined;
}

/** Checks `shownPath` against the directory pinned as `pinnedFd`; says each move once on standard error. */
export function projectLocationCheck(pinnedFd: number, shownPath: string, log: OperatorLog): ProjectLocation {
  let saidSinceMoved = false;
  return {
    problem: () => {
      const pinned = fs.fstatSync(pinnedFd, { bigint: true });
      let shown: fs.BigIntStats | undefined;
      try {
        shown = fs.statSync(shownPath, { bigint: true });
      } catch {
        shown = undefined;
      }
      if (shown !== undefined && shown.dev === pinned.dev && shown.ino === pinned.ino) {
        saidSinceMoved = false;
        return undefined;
      }
      const moved: ProjectMoved = { kind: 'project_moved', path: shownPath, now: shown === undefined ? 'gone' : 'another_directory' };
      if (!saidSinceMoved) log.warn(refusalText(moved), { event: 'project.moved' });
      saidSinceMoved = true;
      return moved;
    },
  };
}

import fs from 'node:fs';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import type { OperatorLog } from '../operator/operator-log.js';

// An invocation hands back an audit reference whose `path` is built from the
// project's path at startup, while its journal is written through the project
// directory pinned then. Once that path leads elsewhere (the folder renamed and
// another made in its place, a bind mount lazily unmounted), the reference
// would name a journal that is not there. So before each run the path must
// still resolve to the pinned directory: the same device and inode, which a
// new folder of the same name cannot have (identity over spelling).

export interface ProjectLocation {
  /** Why the path shown to callers no longer leads to the pinned project, or undefined when it does. */
  problem(): string | undefined;
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
      const message =
        `the project moved: ${escapeToOneLine(shownPath)} ${shown === undefined ? 'no longer exists' : 'is now another directory'}, ` +
        'so an audit reference would not lead to its journal; restart the server in the project folder';
      if (!saidSinceMoved) log.warn(message, { event: 'project.moved' });
      saidSinceMoved = true;
      return message;
    },
  };
}

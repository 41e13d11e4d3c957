import { UnsafeStorageError } from './private-directory.js';
import type { DescriptorRoute } from '../confinement/index.js';
import { readKeyFile, type PinnedSigningKey } from './signing-key-store.js';
import { fileModeText } from '../text/file-mode.js';

// The key announced at startup is the only key a `symbi mcp` process signs
// with: it is read once, handed to the worker threads, and never read again
// for signing. The file is still looked at before each invocation, so that an
// operator who replaced, removed or exposed it learns that this process keeps
// signing with the old key only by being refused (a journal signed with a key
// nobody recorded would fail verification later). The run's worker looks right
// before it creates the journal, in the same directory descriptor; the
// supervisor looks before it claims a run cancelled ahead of its worker.
// Nothing here ever creates a key: a key deleted mid-session stays deleted
// until a restart.

const RESTART = 'this process signs only with the key it announced at startup; restart the server to pick up a new key';

/** What looking at the key file needs: its identity at startup, and its path for messages. */
export type KeyFileAtStartup = Pick<PinnedSigningKey, 'file' | 'shownPath'>;

/**
 * Looks at the key file in an open .symbiont/governed/ (the directory a run is about to
 * create its journal in, so no swap of directories can come between the look and the
 * journal) and compares it with the startup identity. Returns undefined when it is
 * unchanged, otherwise one line saying what changed. Never creates anything.
 */
export function signingKeyFileChange(route: DescriptorRoute, governedDirFd: number, pinned: KeyFileAtStartup): string | undefined {
  const shown = pinned.shownPath;
  try {
    const now = readKeyFile(route, governedDirFd, shown);
    if (now === undefined) return `${shown} was removed after startup; ${RESTART}`;
    now.seed.fill(0);
    const was = pinned.file;
    if (now.identity.dev !== was.dev || now.identity.ino !== was.ino) return `${shown} was replaced by another file after startup; ${RESTART}`;
    if (now.identity.sha256 !== was.sha256) return `${shown}: its content changed after startup; ${RESTART}`;
    if (now.identity.mode !== was.mode)
      return `${shown}: its mode changed from ${fileModeText(was.mode)} to ${fileModeText(now.identity.mode)} after startup; ${RESTART}`;
    return undefined;
  } catch (err) {
    // readKeyFile names what is unsafe (a symlink, group or other access, extra links, the wrong size).
    const problem = err instanceof UnsafeStorageError ? err.message.replace(`${shown}: `, '') : (err as Error).message;
    return `${shown} changed after startup: ${problem}; ${RESTART}`;
  }
}

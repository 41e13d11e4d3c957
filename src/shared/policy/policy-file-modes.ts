import type fs from 'node:fs';
import { fileModeText } from '../text/file-mode.js';

// Who may change the policy set. A policy that another local user can rewrite
// is no policy: it can be turned into `permit` between restarts. So a policy
// file or folder (policies/, policies/mcp-server/) must be writable by its
// owner alone (no group or other write bit), and owned by the server's user,
// as the server's own storage (.symbiont/, the SchemaPin pin store) must be.
// Unlike that storage, policies may be readable by anyone: they are not secret.
// A file owned by root is also accepted, as OpenSSH's StrictModes accepts
// root-owned files: root can change any file anyway, and images built as root
// commonly run the server as another user.

const GROUP_OR_OTHER_WRITE = 0o022;
const ROOT_UID = 0;

/**
 * Why this policy file or folder must not be trusted, or undefined when its owner and mode are sound;
 * the fix names `shown` (its absolute path), recursively for a folder.
 */
export function policyModeProblem(stat: fs.Stats, shown: string, serverUid: number | undefined = process.getuid?.()): string | undefined {
  const mode = fileModeText(stat.mode);
  const recursive = stat.isDirectory() ? ' -R' : '';
  if ((stat.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    const who = (stat.mode & GROUP_OR_OTHER_WRITE) === GROUP_OR_OTHER_WRITE ? 'group and others' : (stat.mode & 0o020) !== 0 ? 'its group' : 'others';
    return `is writable by ${who} (mode ${mode}); policy files and folders must be writable by their owner only (fix: chmod${recursive} go-w ${shown})`;
  }
  // Without uids (not a POSIX platform) only the mode can be checked.
  if (serverUid !== undefined && stat.uid !== serverUid && stat.uid !== ROOT_UID) {
    return `is owned by uid ${stat.uid}, not by the server's uid ${serverUid} or root; another user could rewrite it (fix: chown${recursive} ${serverUid} ${shown})`;
  }
  return undefined;
}

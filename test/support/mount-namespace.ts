import { spawnSync } from 'node:child_process';

/** Why a test cannot start processes in a private mount namespace with a tmpfs over /proc here, or undefined when it can. */
export function namespaceSkip(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces';
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs over /proc in a private mount namespace (run as root)';
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none /proc && test ! -e /proc/self'], { encoding: 'utf8' });
  if (probe.status !== 0) return `unshare -m with a tmpfs over /proc is not possible here: ${(probe.stderr || probe.error?.message || '').trim()}`;
  return undefined;
}

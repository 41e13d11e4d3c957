import fs from 'node:fs';

// Project file confinement opens every path as /proc/self/fd/<dirfd>/<name>,
// the openat() that Node.js lacks. Where that facility is missing (macOS, the
// BSDs, a container or mount namespace without procfs on /proc), each open
// fails with ENOENT, which would read as "this file does not exist": an
// agents/ folder reported absent, AGENTS.md unreadable, no policy files and so
// the default permission. So the server checks once, at startup, that opening
// the pinned directory itself through /proc/self/fd/<fd>/. reaches the very
// same directory (same device and inode as fstat of the descriptor), and when
// it does not, every project file operation refuses with this reason instead.

export type DescriptorAccess = { readonly available: true } | { readonly available: false; readonly reason: string };

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

function platformName(platform: string): string {
  return PLATFORM_NAMES[platform] ?? platform;
}

function unavailable(platform: string, detail: string): DescriptorAccess {
  return {
    available: false,
    reason: `descriptor-relative file access (/proc/self/fd) does not work on this ${platformName(platform)} system: ${detail}; project file confinement requires Linux with procfs mounted on /proc`,
  };
}

/** The one-line refusal every project file operation gives when access is unavailable. */
export function projectFilesUnavailable(reason: string): string {
  return `project files are unavailable: ${reason}`;
}

/** Probes descriptor-relative access on `dirFd`, an open directory descriptor. */
export function checkDescriptorAccess(dirFd: number, platform: string = process.platform): DescriptorAccess {
  const probe = `/proc/self/fd/${dirFd}/.`;
  let probeFd: number;
  try {
    probeFd = fs.openSync(probe, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return unavailable(platform, `${probe} cannot be opened (${code})`);
  }
  try {
    const pinned = fs.fstatSync(dirFd);
    const reached = fs.fstatSync(probeFd);
    if (pinned.dev !== reached.dev || pinned.ino !== reached.ino) {
      return unavailable(platform, `${probe} leads to another directory than the pinned one, so /proc is not the kernel's procfs`);
    }
    return { available: true };
  } finally {
    fs.closeSync(probeFd);
  }
}

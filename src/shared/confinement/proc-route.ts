import fs from 'node:fs';
import type { DescriptorRoute, DirectoryListing } from './descriptor-route.js';
import type { OpenFlags } from './open-flags.js';

// The Linux route that needs no native code: opening /proc/self/fd/<dirfd>/<name>
// resolves <name> relative to that descriptor, the openat() Node.js lacks.
// Node.js opens every descriptor close-on-exec itself.

function procPath(dirFd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dirFd}` : `/proc/self/fd/${dirFd}/${name}`;
}

/** The /proc/self/fd route (Linux with procfs mounted on /proc). */
export function createProcRoute(flags: OpenFlags): DescriptorRoute {
  return {
    name: 'proc',
    flags,
    description: 'opens /proc/self/fd/<dirfd>/<name>, one component at a time',
    openAt: (dirFd, name, flags, mode) => fs.openSync(procPath(dirFd, name), flags, mode),
    mkdirAt: (dirFd, name, mode) => fs.mkdirSync(procPath(dirFd, name), { mode }),
    renameAt: (dirFd, from, to) => fs.renameSync(procPath(dirFd, from), procPath(dirFd, to)),
    // link(2) follows no symlink at its last component; /proc/self/fd/<dirfd> is only the directory.
    linkAt: (dirFd, from, to) => fs.linkSync(procPath(dirFd, from), procPath(dirFd, to)),
    unlinkAt: (dirFd, name) => fs.unlinkSync(procPath(dirFd, name)),
    list(dirFd, max): DirectoryListing {
      const dir = fs.opendirSync(procPath(dirFd), { encoding: 'buffer' as BufferEncoding, bufferSize: 64 });
      const names: Buffer[] = [];
      try {
        for (;;) {
          const entry = dir.readSync();
          if (entry === null) return { names, truncated: false };
          if (names.length >= max) return { names, truncated: true };
          names.push(entry.name as unknown as Buffer);
        }
      } finally {
        dir.closeSync();
      }
    },
  };
}

import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { packageVersion } from '../package-version.js';
import { sha256Hex } from '../canonical-json.js';
import type { RouteName } from './descriptor-route.js';

// Remembers which FFI routes (and the ACL reader) passed their proof in a child process
// (route-proof.ts), so a start on an unchanged system skips the child. A proof
// holds for one combination of everything that decides how the route behaves:
// this package's version, the Node.js version, koffi's version, platform,
// architecture, the kernel release, the libraries the process runs on (on
// Linux every shared library mapped into it, libc included, by path, device,
// inode, size and times, which covers libraries preloaded by any means), the
// contents of /etc/ld.so.preload and the LD_PRELOAD, LD_AUDIT and
// DYLD_INSERT_LIBRARIES variables. When any of these changes, the route is
// proven again; when one cannot be read, nothing is remembered and the route is
// proven at every start. The ACL reader's proof is keyed the same way (its
// calls go into the same C library, under the same preloads), and on a digest
// of the reader's and the proof's code too.
//
// The file lives in the user's cache directory ($XDG_CACHE_HOME, else
// ~/.cache, then symbi-mcp/route-proofs.json). Another user who could write it
// could make the server skip a proof, so it is trusted only when it and its
// folder belong to this user and nobody else can write them; anything else is
// ignored (the route is proven again) and never overwritten.

const FILE_NAME = 'route-proofs.json';
const FORMAT = 1;
/** Entries kept: one per route and system combination, and one per project file system probed (the oldest go first). */
const MAX_ENTRIES = 64;

/** What a child proves (route-proof.ts): a confinement route, or `acl`, the ACL reader's calls (storage/directory-acl.ts). */
export type ProofSubject = RouteName | 'acl';

/**
 * What a proof depends on, as one string; undefined when any of it cannot be told (then nothing is remembered).
 * `code`: a digest of the code proven and of the proof itself (the ACL reader gives one), so a change to
 * either is proven again even where the package version stays the same (a checkout between releases).
 */
export function proofKey(route: ProofSubject, env: NodeJS.ProcessEnv = process.env, code?: string): string | undefined {
  const system = systemIdentity();
  if (system === undefined) return undefined;
  const inputs = JSON.stringify({
    route,
    ...(code === undefined ? {} : { code }),
    symbi: packageVersion,
    node: process.version,
    koffi: koffiVersion(),
    platform: process.platform,
    arch: process.arch,
    ...system,
    preload: [env.LD_PRELOAD ?? '', env.DYLD_INSERT_LIBRARIES ?? ''],
    audit: env.LD_AUDIT ?? '',
  });
  // Kept as a digest: the inputs (a dozen library identities) are too long to keep 64 of in the cache.
  return `${route} sha256:${sha256Hex(inputs)}`;
}

// Both are fixed for the life of the process: worked out once.
let koffiVersionSeen: string | undefined;

function koffiVersion(): string {
  return (koffiVersionSeen ??= readKoffiVersion());
}

function readKoffiVersion(): string {
  try {
    const entry = createRequire(import.meta.url).resolve('koffi');
    let dir = path.dirname(entry);
    for (let i = 0; i < 4; i++) {
      const manifest = path.join(dir, 'package.json');
      if (fs.existsSync(manifest)) {
        const parsed = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
        if (parsed.name === 'koffi' && typeof parsed.version === 'string') return parsed.version;
      }
      dir = path.dirname(dir);
    }
  } catch {
    // below
  }
  return 'unknown';
}

/**
 * The system under the route, worked out once per process. Linux: the kernel
 * release, /etc/ld.so.preload's contents (the dynamic loader reads it for every
 * program, whatever the environment says) and every shared library mapped into
 * this process, which is what the route calls through: the libc (or musl
 * loader) and anything preloaded or audited into it. macOS and FreeBSD: the
 * kernel release, which moves with the system's libc. Undefined when any part
 * cannot be read or no C library is found: a proof that cannot be tied to its
 * inputs is not remembered.
 */
function systemIdentity(): SystemIdentity | undefined {
  return (systemSeen ??= { value: readSystemIdentity() }).value;
}

interface SystemIdentity {
  kernel: string;
  ldSoPreload?: string;
  libraries?: string[];
}

let systemSeen: { value: SystemIdentity | undefined } | undefined;

/** Where the Linux dynamic loader reads its system-wide preload list. */
const LD_SO_PRELOAD = '/etc/ld.so.preload';
/** The C library's file among the mapped ones (glibc, or musl whose loader is its libc). */
const LIBC_FILE = /\/(?:libc\.so\.6|libc-[\d.]+\.so|ld-musl-[^/]+\.so\.1|libc\.musl-[^/]+\.so\.1)$/;
/** A shared library's file name (libfoo.so, libfoo.so.1.2); koffi's own .node addon is named by koffi's version. */
const SHARED_LIBRARY = /\.so(?:\.[\d.]+)?$/;

function readSystemIdentity(): SystemIdentity | undefined {
  const kernel = `${os.type()} ${os.release()}`;
  if (process.platform !== 'linux') return { kernel };
  const ldSoPreload = readLdSoPreload();
  const libraries = mappedLibraries();
  if (ldSoPreload === undefined || libraries === undefined) return undefined;
  return { kernel, ldSoPreload, libraries };
}

/** "absent", or the SHA-256 of /etc/ld.so.preload; undefined when it exists but cannot be read. */
function readLdSoPreload(): string | undefined {
  try {
    return 'sha256:' + sha256Hex(fs.readFileSync(LD_SO_PRELOAD));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : undefined;
  }
}

/**
 * Every shared library mapped into this process, sorted, each as "path dev:inode size mtime ctime"
 * from /proc/self/maps and a stat of the file, so a library replaced or upgraded in place is
 * another input. Undefined when the maps cannot be read, no C library is among them, or a
 * mapped library cannot be looked at (replaced since it was mapped, say).
 */
function mappedLibraries(): string[] | undefined {
  let maps: string;
  try {
    maps = fs.readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return undefined;
  }
  const files = new Map<string, string>();
  for (const line of maps.split('\n')) {
    // address perms offset dev inode path: the path is the rest of the line and may hold spaces.
    const match = /^\S+\s+\S+\s+\S+\s+(\S+)\s+(\d+)\s+(\/.*)$/.exec(line);
    if (match === null) continue;
    const [, dev, inode, file] = match as unknown as [string, string, string, string];
    if (SHARED_LIBRARY.test(file) || LIBC_FILE.test(file) || file.endsWith(' (deleted)')) files.set(file, `${dev}:${inode}`);
  }
  if (![...files.keys()].some((file) => LIBC_FILE.test(file))) return undefined;
  const libraries: string[] = [];
  for (const [file, mapped] of files) {
    try {
      const stat = fs.statSync(file);
      libraries.push(`${file} ${mapped} ${stat.size} ${stat.mtimeMs} ${stat.ctimeMs}`);
    } catch {
      return undefined;
    }
  }
  return libraries.sort();
}

/** $XDG_CACHE_HOME/symbi-mcp (an absolute XDG_CACHE_HOME only, as the XDG spec says), else ~/.cache/symbi-mcp. */
export function proofCacheDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, 'symbi-mcp');
  const home = env.HOME;
  if (home !== undefined && path.isAbsolute(home)) return path.join(home, '.cache', 'symbi-mcp');
  return undefined;
}

/** Why `stat` (of the cache folder or file) cannot be trusted, or undefined when only this user can change it. */
function untrusted(stat: fs.Stats): string | undefined {
  const uid = process.geteuid?.();
  if (uid !== undefined && stat.uid !== uid) return `belongs to uid ${stat.uid}, not this user (${uid})`;
  if ((stat.mode & 0o022) !== 0) return `can be written by other users (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}

export type CacheRead = { entries: string[]; problem?: string };

/** The remembered proof keys, or none with the reason the file was not trusted. A missing file is simply empty. */
export function readProofCache(dir: string | undefined): CacheRead {
  if (dir === undefined) return { entries: [] };
  const file = path.join(dir, FILE_NAME);
  let fd: number;
  try {
    const dirStat = fs.lstatSync(dir);
    if (!dirStat.isDirectory()) return { entries: [], problem: `${dir} is not a directory` };
    const dirProblem = untrusted(dirStat);
    if (dirProblem !== undefined) return { entries: [], problem: `${dir} ${dirProblem}` };
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { entries: [] };
    return { entries: [], problem: `${file} cannot be read (${code ?? 'error'})` };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return { entries: [], problem: `${file} is not a regular file` };
    const problem = untrusted(stat);
    if (problem !== undefined) return { entries: [], problem: `${file} ${problem}` };
    if (stat.size > 64 * 1024) return { entries: [], problem: `${file} is larger than 64 KiB` };
    const parsed = JSON.parse(fs.readFileSync(fd, 'utf8')) as { format?: unknown; proofs?: unknown };
    if (parsed.format !== FORMAT || !Array.isArray(parsed.proofs)) return { entries: [] };
    return { entries: parsed.proofs.filter((p): p is string => typeof p === 'string') };
  } catch {
    return { entries: [], problem: `${file} is not a proof cache this version writes` };
  } finally {
    fs.closeSync(fd);
  }
}

/** Adds `key` to the cache (private folder and file, replaced in one rename); a failure only means the next start proves again. */
export function rememberProof(dir: string | undefined, key: string, known: readonly string[]): string | undefined {
  if (dir === undefined) return 'no cache directory (neither XDG_CACHE_HOME nor HOME is an absolute path)';
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const dirStat = fs.lstatSync(dir);
    const problem = dirStat.isDirectory() ? untrusted(dirStat) : 'is not a directory';
    if (problem !== undefined) return `${dir} ${problem}`;
    const proofs = [...known.filter((k) => k !== key), key].slice(-MAX_ENTRIES);
    const temp = path.join(dir, `.${FILE_NAME}.${process.pid}.${Date.now()}`);
    fs.writeFileSync(temp, `${JSON.stringify({ format: FORMAT, proofs })}\n`, { mode: 0o600, flag: 'wx' });
    fs.renameSync(temp, path.join(dir, FILE_NAME));
    return undefined;
  } catch (err) {
    return `${dir} cannot be written (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
}

/** What the project-file-system probe remembers: file systems (device and type) where a route passed it. */
export interface ProbeMemory {
  has(fileSystem: string): boolean;
  add(fileSystem: string): void;
}

/**
 * The probes on the project's file system (route-self-test.ts) remembered in
 * the same trusted cache, per route, system (as proofKey) and file system; undefined
 * when nothing can be remembered (the system cannot be told: see systemIdentity).
 */
export function projectProbeMemory(route: RouteName, env: NodeJS.ProcessEnv): ProbeMemory | undefined {
  const base = proofKey(route, env);
  if (base === undefined) return undefined;
  const dir = proofCacheDirectory(env);
  const keyOf = (fileSystem: string): string => JSON.stringify({ probe: 'project file system', system: base, fileSystem });
  return {
    has: (fileSystem) => readProofCache(dir).entries.includes(keyOf(fileSystem)),
    add: (fileSystem) => {
      const cache = readProofCache(dir);
      if (cache.problem === undefined) rememberProof(dir, keyOf(fileSystem), cache.entries);
    },
  };
}

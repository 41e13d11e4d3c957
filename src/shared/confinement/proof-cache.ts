import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { packageVersion } from '../package-version.js';
import type { RouteName } from './descriptor-route.js';

// Remembers which FFI routes passed their proof in a child process
// (route-proof.ts), so a start on an unchanged system skips the child. A proof
// holds for one combination of this package's version, the Node.js version,
// koffi's version, platform, architecture, the C library and any preloaded
// libraries; when any of these changes, the route is proven again.
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

/** What a proof depends on, as one string; undefined when the C library cannot be told (then nothing is remembered). */
export function proofKey(route: RouteName, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const libc = libcIdentity();
  if (libc === undefined) return undefined;
  return JSON.stringify({
    route,
    symbi: packageVersion,
    node: process.version,
    koffi: koffiVersion(),
    platform: process.platform,
    arch: process.arch,
    libc,
    preload: [env.LD_PRELOAD ?? '', env.DYLD_INSERT_LIBRARIES ?? ''],
  });
}

// Both are fixed for the life of the process: worked out once.
let koffiVersionSeen: string | undefined;
let libcSeen: { value: string | undefined } | undefined;

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
 * The C library this process runs on. Linux: the libc (or musl loader) file
 * mapped into the process, with its size and change time, so an upgrade in
 * place is a new library. macOS and FreeBSD: the kernel release, which moves
 * with the system's libc. Where none can be told, the proof is not remembered.
 */
function libcIdentity(): string | undefined {
  return (libcSeen ??= { value: readLibcIdentity() }).value;
}

function readLibcIdentity(): string | undefined {
  if (process.platform !== 'linux') return `${os.type()} ${os.release()}`;
  let maps: string;
  try {
    maps = fs.readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return undefined;
  }
  const file = /\s(\/\S*\/(?:libc\.so\.6|libc-[\d.]+\.so|ld-musl-[^/\s]+\.so\.1|libc\.musl-[^/\s]+\.so\.1))$/m.exec(maps)?.[1];
  if (file === undefined) return undefined;
  try {
    const stat = fs.statSync(file);
    return `${file} ${stat.size} ${stat.ctimeMs}`;
  } catch {
    return undefined;
  }
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
 * when nothing can be remembered (the C library cannot be told).
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

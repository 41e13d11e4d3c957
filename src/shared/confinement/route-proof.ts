import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { packageRootUrl } from '../package-version.js';
import { BUILD_CLI_MODULE } from '../worker-modules.js';
import type { RouteName } from './descriptor-route.js';
import { testConstantOverrides, type OverridableConstant } from './open-flags.js';
import { proofCacheDirectory, proofKey, readProofCache, rememberProof, type ProofSubject } from './proof-cache.js';
import { selfTestRoute } from './route-self-test.js';
import { routeByName } from './routes.js';

// The first call into a C library through koffi is a leap: a wrong symbol,
// signature or struct layout on a system this project never ran on (a new
// macOS, a new koffi, an unusual libc) crashes the whole process rather than
// failing a check. So an FFI route is first proven in a short-lived child
// process, the same Node.js executable running this same package (`symbi
// route-proof <route>`, hidden from help): it builds the route and runs the
// whole self-test (route-self-test.ts) and prints one JSON line. A crash, a
// hang past the deadline, or a failed check refuses the route in the server,
// which never calls into it; the next route is tried. A passed proof is
// remembered (proof-cache.ts), so an unchanged system pays for the child once.
// The ACL reader (storage/directory-acl.ts) calls C functions the same way and
// is proven the same way, as the subject `acl`; the command that runs the
// child (supervisor/commands/route-proof-command.ts) knows how to prove each.

/** The hidden sub-command the child runs. */
export const ROUTE_PROOF_COMMAND = 'route-proof';
/** How long the child may take: a Node.js start, koffi's load and the self-test take well under a second, several seconds on a loaded machine, which must not be refused. */
const PROOF_DEADLINE_MS = 15_000;
const OUTPUT_MAX_BYTES = 64 * 1024;

export type ChildProof = { readonly ok: true; readonly note: string } | { readonly ok: false; readonly reason: string };

/** In the child: builds and proves `name` in this process; the one JSON line it prints says how it went. */
export function proveRouteHere(name: string, env: NodeJS.ProcessEnv = process.env): { ok: true } | { ok: false; reason: string } {
  let route;
  try {
    route = routeByName(name as RouteName, testConstantOverrides(env));
  } catch (err) {
    return { ok: false, reason: `cannot be used: ${(err as Error).message}` };
  }
  try {
    selfTestRoute(route);
  } catch (err) {
    return { ok: false, reason: `failed its self-test: ${(err as Error).message}` };
  }
  return { ok: true };
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

function runChild(name: ProofSubject, env: NodeJS.ProcessEnv, deadlineMs: number): ChildProof {
  const buildCli = fileURLToPath(BUILD_CLI_MODULE);
  const entry = fs.existsSync(buildCli) ? buildCli : fileURLToPath(new URL('bin/symbi.js', packageRootUrl));
  const started = performance.now();
  const run = spawnSync(process.execPath, [entry, ROUTE_PROOF_COMMAND, name], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: deadlineMs,
    killSignal: 'SIGKILL',
    maxBuffer: OUTPUT_MAX_BYTES,
  });
  const ms = Math.round(performance.now() - started);
  const error: NodeJS.ErrnoException | undefined = run.error;
  const code = error?.code;
  if (code === 'ETIMEDOUT') return { ok: false, reason: `hung in its proof in a child process: no answer within ${deadlineMs} ms` };
  if (run.error !== undefined) return { ok: false, reason: `could not be proven in a child process (${code ?? run.error.message})` };
  if (run.signal !== null) return { ok: false, reason: `crashed in its proof in a child process (${run.signal}), so it is not called in the server` };
  let answer: { ok?: unknown; reason?: unknown } | undefined;
  try {
    answer = JSON.parse(lastLine(run.stdout)) as { ok?: unknown; reason?: unknown };
  } catch {
    answer = undefined;
  }
  if (run.status === 0 && answer?.ok === true) return { ok: true, note: `proven in a child process (${ms} ms)` };
  if (answer?.ok === false && typeof answer.reason === 'string') return { ok: false, reason: answer.reason };
  const said = lastLine(run.stderr);
  return { ok: false, reason: `its proof in a child process ended with status ${run.status}${said ? `: ${said}` : ''}` };
}

/**
 * Proofs passed in this process, by subject, code and the preloads the child was given. The
 * libraries of a running process do not change, so a later start in the same process (a second
 * session, a `symbi check` after a server's own start) does not prove again; this also holds where
 * nothing is remembered on disk (no /proc to tell the libraries apart). A new process starts empty.
 */
const provenInThisProcess = new Set<string>();

/**
 * Proves the FFI route (or the ACL reader) `name` in a child process, unless
 * this process or this system's cache already holds its proof. With test-only
 * constant overrides nothing is remembered or read: a bent route is always proven afresh.
 */
export function proveInChild(
  name: ProofSubject,
  env: NodeJS.ProcessEnv,
  overrides: Partial<Record<OverridableConstant, number>>,
  /** A digest of the code proven and of its proof, part of what is remembered (proofKey). */
  code?: string,
): ChildProof {
  const bent = Object.keys(overrides).length > 0;
  const inProcess = bent ? undefined : JSON.stringify([name, code ?? '', env.LD_PRELOAD ?? '', env.DYLD_INSERT_LIBRARIES ?? '', env.LD_AUDIT ?? '']);
  if (inProcess !== undefined && provenInThisProcess.has(inProcess)) return { ok: true, note: 'proven in a child process earlier in this process' };
  const proof = proveOnce(name, env, overrides, bent, code);
  if (proof.ok && inProcess !== undefined) provenInThisProcess.add(inProcess);
  return proof;
}

/** proveInChild's proof when this process has not made it: remembered for this system, or proven now. */
function proveOnce(
  name: ProofSubject,
  env: NodeJS.ProcessEnv,
  overrides: Partial<Record<OverridableConstant, number>>,
  bent: boolean,
  code?: string,
): ChildProof {
  const key = bent ? undefined : proofKey(name, env, code);
  const dir = proofCacheDirectory(env);
  const cache = key === undefined ? { entries: [] } : readProofCache(dir);
  if (key !== undefined && cache.entries.includes(key)) return { ok: true, note: 'its child-process proof is remembered for this system' };
  const proof = runChild(name, env, overrides.PROOF_DEADLINE_MS ?? PROOF_DEADLINE_MS);
  if (!proof.ok || key === undefined) return proof;
  if (cache.problem !== undefined) return { ok: true, note: `${proof.note}; not remembered: ${cache.problem}` };
  const problem = rememberProof(dir, key, cache.entries);
  return { ok: true, note: problem === undefined ? `${proof.note}, remembered` : `${proof.note}; not remembered: ${problem}` };
}

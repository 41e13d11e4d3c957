import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startInProcessServer } from './in-process-server.js';
import { type InvokeOutcome, textOf } from './server.js';
import { builtModule, repoRoot } from './server-entry.js';

// Cheaper ways for the ownership tests (test/process/project-directory-ownership.test.ts,
// trusted-writers.test.ts and their kin) to ask what the server decides about a project:
// - invokeInProcess: the session `symbi mcp` serves (in-process-server.ts), in the test process;
// - startSessionHost: the same, in one child process (./ownership-session-host.ts) that may run
//   as another user or in a mount namespace and serves one project after another, so a test
//   pays for one process per user or namespace instead of one `symbi mcp` per project;
// - checkReport: what `symbi check` prints for a project, built in the test process.
// Each gives what invokeOnce (./server.ts) or the command gives, so an assertion reads the same.

type CheckCommand = typeof import('../../src/supervisor/commands/check-command.js');
type Confinement = typeof import('../../src/shared/confinement/index.js');

/** An invoke_agent outcome before the provider requests are counted. */
export type SessionAnswer = Omit<InvokeOutcome, 'requests'>;

/** Serves `project` in this process with `env`, asks `assistant` to say hello once, and ends the session; stderr is its operator log. */
export async function sessionAnswer(project: string, env: Record<string, string>): Promise<SessionAnswer> {
  const server = await startInProcessServer(project, { env });
  try {
    const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
    return { text: textOf(result), isError: result.isError === true, stderr: server.stderr() };
  } finally {
    await server.close();
  }
}

/** invokeOnce's outcome from a session served in this process: the requests `endpoint` received meanwhile are counted. */
export async function invokeInProcess(project: string, env: Record<string, string>, endpoint: { requests: readonly unknown[] }): Promise<InvokeOutcome> {
  const sent = endpoint.requests.length;
  const answer = await sessionAnswer(project, env);
  return { ...answer, requests: endpoint.requests.length - sent };
}

/** A child process that serves one project after another, each as invokeOnce would, and reports as `symbi check` would. */
export interface SessionHost {
  invoke(project: string): Promise<InvokeOutcome>;
  /** What `symbi check --project dir` would print, run by the host. */
  check(dir: string): Promise<string>;
  /** Ends the host; rejects unless it exited 0. */
  close(): Promise<void>;
}

/**
 * Starts ./ownership-session-host under `launcher` (setpriv to another user, unshare ...; the
 * host's command is appended) with `env` as its whole environment.
 */
export function startSessionHost(options: { env: Record<string, string>; launcher?: string[] }, endpoint: { requests: readonly unknown[] }): SessionHost {
  const { command, args } = sessionHostLaunch(options.launcher ?? []);
  const child = spawn(command, args, { env: options.env, cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  const answers = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exchange = async <T>(request: Record<string, string>): Promise<T> => {
    child.stdin.write(`${JSON.stringify(request)}\n`);
    const next = await answers.next();
    if (next.done === true) throw new Error(`the session host ended (exit ${String(await exited)}): ${stderr}`);
    const answer = JSON.parse(next.value) as T | { error: string };
    if (typeof answer === 'object' && answer !== null && 'error' in answer)
      throw new Error(`the session host failed ${JSON.stringify(request)}: ${answer.error}`);
    return answer;
  };
  // One request at a time: each answer is the next line, and the requests counted are the run's own.
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(step: () => Promise<T>): Promise<T> => {
    const turn = queue.then(step);
    queue = turn.catch(() => undefined);
    return turn;
  };
  return {
    invoke: (project) =>
      inTurn(async () => {
        const sent = endpoint.requests.length;
        const answer = await exchange<SessionAnswer>({ invoke: project });
        return { ...answer, requests: endpoint.requests.length - sent };
      }),
    check: (dir) => inTurn(async () => (await exchange<{ report: string }>({ check: dir })).report),
    close: async () => {
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(`the session host exited ${String(code)}: ${stderr}`);
    },
  };
}

/** The command that runs ./ownership-session-host under `launcher`, whose user must be able to reach it. */
function sessionHostLaunch(launcher: readonly string[]): { command: string; args: string[] } {
  const own = fileURLToPath(import.meta.url);
  // Compiled (.test-build/) the host is a sibling .js; from TypeScript it needs tsx's loader, found from the repository root.
  const host = path.join(path.dirname(own), `ownership-session-host${path.extname(own)}`);
  const node = [...(own.endsWith('.ts') ? ['--import', 'tsx'] : []), host];
  const [first, ...rest] = launcher;
  return first === undefined ? { command: process.execPath, args: node } : { command: first, args: [...rest, process.execPath, ...node] };
}

/**
 * Why `launcher`'s user cannot start the session host, or false: it is started with no request,
 * so it loads its modules and ends. A checkout under a folder only root may enter (a `mktemp -d`
 * clone, /root) is such a case, even when the server it tests is installed where anyone may run it.
 */
export function sessionHostUnreachable(launcher: string[]): string | false {
  const { command, args } = sessionHostLaunch(launcher);
  const probe = spawnSync(command, args, { cwd: repoRoot, input: '', encoding: 'utf8' });
  if (probe.status === 0) return false;
  const why = probe.error?.message ?? probe.stderr.split('\n').find((line) => /Error|denied/.test(line)) ?? `exit ${String(probe.status)}`;
  return `another user cannot start the session host ${args.at(-1) ?? ''} (${why.trim()})`;
}

/** What `symbi check --project dir` prints on standard output, built in this process with `env` as its environment. */
export async function checkReport(dir: string, env: Record<string, string>): Promise<string> {
  const [{ buildCheckReport, formatCheckReport }, { pinProject }] = await Promise.all([
    import(builtModule('supervisor/commands/check-command.js')) as Promise<CheckCommand>,
    import(builtModule('shared/confinement/index.js')) as Promise<Confinement>,
  ]);
  const project = pinProject(dir, env);
  try {
    return formatCheckReport(await buildCheckReport(project, { strict: false, online: false }, env));
  } finally {
    fs.closeSync(project.fd);
  }
}

// The demo proper. Two routes start it through demo-main.ts: scripts/demo.mjs (`npm run demo` in a
// clone, through tsx, once the dependencies are installed and the package built) and `symbi demo` (from
// its bundled copy, loaded only for that command). Only the commands it suggests differ between the two.
//
// It serves a fresh copy of examples/quickstart/ with `symbi mcp` over stdio, answers inference from the
// in-process synthetic endpoint, and walks through what a user should see: the agent list, one governed
// answer with its audit reference, a Cedar refusal, a cancelled slow call, `symbi audit inspect` on
// every journal, and the example's policy cases (`symbi policy test`). Each step checks what it saw;
// the exit status is 0 only when every step behaved. The copy is removed at the end unless --keep.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { packageRootUrl } from '../shared/package-version.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from './synthetic-endpoint.js';

/** Where the demo was started from: a clone of the repository, or an installed package. */
export type DemoOrigin = 'clone' | 'package';

/** How the demo was started, which decides how the commands it suggests are spelled. */
export interface DemoStart {
  origin: DemoOrigin;
  /** Started by `npm run demo` (its options follow `--`), else by `symbi demo`. */
  npmScript: boolean;
  /** The folder it was started from: a clone's `node bin/symbi.js` is spelled relative to it. */
  cwd: string;
  /** Keep the copy of the example (and its journals) for the `symbi audit` commands. */
  keep: boolean;
}

const repoRoot = fileURLToPath(packageRootUrl);
const symbiBin = path.join(repoRoot, 'bin', 'symbi.js');
export const exampleDir = path.join(repoRoot, 'examples', 'quickstart');
const STEP_TIMEOUT_MS = 15_000;
/** A connection to a local port is made or refused at once; a rule that drops it is not worth waiting on. */
const LOOPBACK_PROBE_TIMEOUT_MS = 3_000;

/** An installed package always lies in a node_modules folder (npx's cache, a global or a project install); a clone does not. */
export function thisCopyOrigin(): DemoOrigin {
  return repoRoot.split(path.sep).includes('node_modules') ? 'package' : 'clone';
}

// ---- options ---------------------------------------------------------------------------------------

/** The demo's options, taken by both routes (`symbi demo --keep`, `npm run demo -- --keep`). */
export const KEEP_OPTION = '--keep';
export const ENDPOINT_OPTION = '--endpoint';
export const PORT_OPTION = '--port';
/** Where `--endpoint` listens unless `--port` says otherwise: fixed, so a client's configuration outlives a restart. */
export const DEMO_ENDPOINT_PORT = 8642;

export interface DemoOptions {
  keep: boolean;
  /** Only the local model endpoint, for a real MCP client (demo-endpoint.ts), on this port. */
  endpoint?: { port: number };
}

const USAGE = `the options are ${KEEP_OPTION} (keep the copy of the example), or ${ENDPOINT_OPTION} [${PORT_OPTION} N] (only the local model endpoint, for your MCP client)`;

/** The demo's options from its command-line words, or the one-line usage problem (exit 2). */
export function parseDemoArgs(words: readonly string[]): DemoOptions | { problem: string } {
  let keep = false;
  let endpoint = false;
  let port: number | undefined;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === KEEP_OPTION) keep = true;
    else if (word === ENDPOINT_OPTION) endpoint = true;
    else if (word === PORT_OPTION || word.startsWith(`${PORT_OPTION}=`)) {
      const value = word === PORT_OPTION ? words[++i] : word.slice(PORT_OPTION.length + 1);
      port = Number(value);
      if (value === undefined || !/^\d+$/.test(value) || port > 65535)
        return { problem: `${PORT_OPTION} takes a port number from 1 to 65535 (0: any free port), not ${JSON.stringify(value ?? '')}` };
    } else {
      const kind = word.startsWith('-') ? 'option' : 'argument';
      return { problem: `unknown ${kind} ${JSON.stringify(word)}; ${USAGE}` };
    }
  }
  if (endpoint && keep) return { problem: `${KEEP_OPTION} keeps the walk-through's copy and ${ENDPOINT_OPTION} starts no walk-through; give one of them` };
  if (port !== undefined && !endpoint) return { problem: `${PORT_OPTION} goes with ${ENDPOINT_OPTION}; ${USAGE}` };
  return endpoint ? { keep, endpoint: { port: port ?? DEMO_ENDPOINT_PORT } } : { keep };
}

/** A word as a POSIX shell reads it back: as it is when plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

// ---- the commands the demo suggests ----------------------------------------------------------------

/**
 * How a person runs this installed copy from anywhere: `symbi-mcp` when that name on their PATH is this
 * very package (a global install), else this copy's bin by its absolute path. Never `npx -y symbi-mcp`:
 * until the package is published, that name on the public registry is not ours (README).
 */
export function installedCommand(searchPath = process.env.PATH ?? ''): string {
  const mine = fs.realpathSync(symbiBin);
  for (const dir of searchPath.split(path.delimiter).filter((d) => path.isAbsolute(d))) {
    try {
      if (fs.realpathSync(path.join(dir, 'symbi-mcp')) === mine) return 'symbi-mcp';
    } catch {
      // not in this folder
    }
  }
  return `node ${shellWord(mine)}`;
}

/** The server command to put in an MCP client's configuration, which starts it from any folder. */
export function clientServerCommand(origin: DemoOrigin): string {
  return origin === 'clone' ? `node ${shellWord(symbiBin)}` : installedCommand();
}

// ---- terminal output -------------------------------------------------------------------------------

const useColour = process.stdout.isTTY === true && (process.env.NO_COLOR ?? '') === '';
const paint = (code: string) => (text: string) => (useColour ? `\u001b[${code}m${text}\u001b[0m` : text);
const bold = paint('1');
const dim = paint('2');
const green = paint('32');
const red = paint('31');
const yellow = paint('33');

/** Set by Ctrl-C: the walk-through, still unwinding, prints nothing more (runDemo). */
let interrupted = false;

function say(line = ''): void {
  if (!interrupted) process.stdout.write(`${line}\n`);
}

function heading(n: number, title: string): void {
  say();
  say(bold(`${n}. ${title}`));
}

function field(label: string, value: string): void {
  say(`   ${dim(label.padEnd(12))} ${value}`);
}

const failures: string[] = [];

function check(ok: boolean, what: string): boolean {
  if (ok) {
    say(`   ${green('ok')}  ${what}`);
  } else {
    say(`   ${red('FAILED')}  ${what}`);
    failures.push(what);
  }
  return ok;
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A report field as text: a string as it is, nothing as empty, anything else as JSON (not "[object Object]"). */
function fieldText(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

// ---- MCP results -----------------------------------------------------------------------------------

interface AuditReference {
  agent_id: string;
  audit: { run_id: string; path: string; public_key: string };
}

interface ToolResult {
  content?: { type: string; text?: string }[];
  structuredContent?: unknown;
  isError?: boolean;
}

function textOf(result: ToolResult): string {
  return (result.content ?? []).map((c) => c.text ?? '').join('');
}

function auditOf(result: ToolResult): AuditReference | undefined {
  const sc = result.structuredContent as Partial<AuditReference> | undefined;
  return sc?.audit !== undefined && typeof sc.audit.run_id === 'string' ? (sc as AuditReference) : undefined;
}

interface ListedAgent {
  stem: string;
  file: string;
  invocable: boolean;
  declared_name?: string;
  reason?: string;
}

// ---- journals --------------------------------------------------------------------------------------

function journalDir(project: string): string {
  return path.join(project, '.symbiont', 'governed');
}

function journals(project: string): string[] {
  const dir = journalDir(project);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .map((n) => path.join(dir, n));
}

function lastEventName(file: string): string | undefined {
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
  const last = lines[lines.length - 1];
  if (last === undefined) return undefined;
  try {
    const event = (JSON.parse(last) as { payload: { entry: { event: Record<string, unknown> } } }).payload.entry.event;
    return Object.keys(event)[0];
  } catch {
    return undefined;
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Verdict {
  status: number;
  label: string;
  report: Record<string, unknown>;
}

function auditInspect(journal: string, runId: string, publicKey: string): Verdict {
  const result = spawnSync(process.execPath, [symbiBin, 'audit', 'inspect', journal, '--run-id', runId, '--public-key', publicKey], {
    encoding: 'utf8',
    timeout: STEP_TIMEOUT_MS,
  });
  let report: Record<string, unknown> = {};
  try {
    report = JSON.parse(result.stdout) as Record<string, unknown>;
  } catch {
    report = { error: oneLine(result.stderr || result.stdout || 'no output') };
  }
  const status = result.status ?? -1;
  const label = status === 0 ? 'complete' : status === 2 ? 'requires reconciliation' : 'failed';
  return { status, label, report };
}

function terminalSummary(reason: unknown): string {
  if (reason === 'Completed') return 'Completed';
  if (typeof reason === 'object' && reason !== null && 'Error' in reason) {
    const message = (reason as { Error?: { message?: unknown } }).Error?.message;
    return `Error: ${oneLine(fieldText(message), 90)}`;
  }
  return oneLine(JSON.stringify(reason ?? null), 90);
}

// ---- the walk-through ------------------------------------------------------------------------------

/** The machine cannot run the demo (temporary folder, port, loopback): one line with the cause and the fix, exit 1. */
export class DemoSetupError extends Error {}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
}

/** Removes the demo's folder; a server killed at close may still be finishing a write, hence the retries. */
function removeCopy(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/** A fresh copy of the example in its own `symbi-demo-*` folder of the temporary folder; the copy's path. */
function copyExample(): string {
  let dir: string | undefined;
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-demo-'));
    const project = path.join(dir, 'quickstart');
    // A stray .symbiont/ (from running the server in the example itself) must not leak into the demo.
    fs.cpSync(exampleDir, project, { recursive: true, filter: (src) => !path.basename(src).startsWith('.') || src === exampleDir });
    return project;
  } catch (error) {
    // A copy cut short (a full disk) is no use to anyone.
    if (dir !== undefined) removeCopy(dir);
    const code = errorCode(error);
    const fix = code === 'ENOSPC' || code === 'EDQUOT' ? 'free some space there or set TMPDIR to another folder' : 'set TMPDIR to a folder you can write to';
    throw new DemoSetupError(`cannot make a copy of the example in the temporary folder ${os.tmpdir()} (${code}); ${fix}`);
  }
}

/** The synthetic endpoint on 127.0.0.1 (`port` 0: any free port), or a DemoSetupError saying how to fix the machine. */
export async function startEndpoint(port = 0): Promise<SyntheticEndpoint> {
  try {
    return await startSyntheticEndpoint({ port });
  } catch (error) {
    const code = errorCode(error);
    const cause =
      code === 'EADDRNOTAVAIL'
        ? 'give the loopback interface its address with `ip addr add 127.0.0.1/8 dev lo`'
        : code === 'EADDRINUSE'
          ? port === 0
            ? 'no local port is free; free one (or widen net.ipv4.ip_local_port_range)'
            : `port ${port} is taken; stop what listens there, or pick another with --port`
          : 'check that the loopback interface is up and a local port is free';
    throw new DemoSetupError(`the local model endpoint could not listen on 127.0.0.1 (${code}); ${cause}, then run the demo again`);
  }
}

/**
 * Connects to the endpoint once. With the loopback interface down, listening on 127.0.0.1 still works
 * but every connection fails (ENETUNREACH); without this check each step then failed on its own.
 */
export async function checkLoopback(endpoint: SyntheticEndpoint): Promise<void> {
  const { hostname, port } = new URL(endpoint.origin);
  const problem = await new Promise<string | undefined>((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.setTimeout(LOOPBACK_PROBE_TIMEOUT_MS, () => {
      socket.destroy();
      resolve('ETIMEDOUT');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error) => resolve(errorCode(error)));
  });
  if (problem === undefined) return;
  const where = `connecting to the local model endpoint at ${hostname}:${port} failed with ${problem}`;
  if (problem === 'ENETUNREACH' || problem === 'EADDRNOTAVAIL') {
    throw new DemoSetupError(`the loopback interface is down (${where}); bring it up with \`ip link set lo up\`, then run the demo again`);
  }
  throw new DemoSetupError(
    `the demo cannot reach its local model endpoint (${where}); check that nothing (a firewall rule) blocks connections to 127.0.0.1, then run the demo again`,
  );
}

/** The copy of the example and the endpoint answering for the model, or a DemoSetupError with nothing left behind. */
async function setUp(): Promise<{ project: string; endpoint: SyntheticEndpoint }> {
  const project = copyExample();
  let endpoint: SyntheticEndpoint | undefined;
  try {
    endpoint = await startEndpoint();
    await checkLoopback(endpoint);
    return { project, endpoint };
  } catch (error) {
    await endpoint?.close();
    removeCopy(path.dirname(project));
    throw error;
  }
}

interface Run {
  label: string;
  journal: string;
  runId: string;
  /** The inspect exit status this run should get: 0 complete, 2 complete but with an effect to reconcile. */
  expectedStatus: 0 | 2;
}

/** Runs the whole walk-through; resolves with the exit status (0 when every step behaved). */
export async function runDemo(start: DemoStart): Promise<number> {
  // How the reader runs the same commands themselves, from where they started the demo.
  const cloneBin = path.relative(start.cwd, symbiBin);
  const outside = path.isAbsolute(cloneBin) || cloneBin.startsWith('..');
  const symbi = start.origin === 'clone' ? `node ${shellWord(outside ? symbiBin : cloneBin)}` : installedCommand();
  const rerunKeeping = start.npmScript ? `npm run demo -- ${KEEP_OPTION}` : `${symbi} demo ${KEEP_OPTION}`;
  const started = Date.now();

  // What the demo needs from the machine, each refused in one line with its fix, before any report.
  const { project, endpoint } = await setUp();
  const copyDir = path.dirname(project);
  say(bold('symbi mcp demo') + dim('  (a governed MCP server, driven by the MCP SDK client over stdio)'));
  field('project', `${project} ${dim('(a fresh copy of examples/quickstart)')}`);
  field('model', `synthetic endpoint at ${endpoint.url} ${dim('(local, no network, no key)')}`);

  // Only what the server needs: real provider keys in the user's environment never reach the demo.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    OPENAI_BASE_URL: endpoint.url,
    OPENAI_API_KEY: 'sk-demo-not-a-real-key',
    CHAT_MODEL: 'synthetic',
  };
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [symbiBin, 'mcp', '--project', project],
    env,
    stderr: 'pipe',
  });
  let serverStderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    serverStderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'symbi-demo', version: '1.0.0' });
  const runs: Run[] = [];
  let publicKey = '';

  let serverStopped: Promise<void> | undefined;
  const stopServer = (): Promise<void> =>
    (serverStopped ??= (async () => {
      endpoint.releaseAll();
      await client.close().catch(() => undefined);
      await endpoint.close().catch(() => undefined);
    })());
  /** Removes the copy unless --keep; the reason it could not, or undefined. */
  const removeCopyUnlessKept = (): string | undefined => {
    if (start.keep) return undefined;
    try {
      removeCopy(copyDir);
      return undefined;
    } catch (error) {
      return `the copy of the example could not be removed (${errorCode(error)}); remove ${copyDir} by hand`;
    }
  };
  // Ctrl-C (or SIGTERM) mid-demo ends it as its last step does: the server stopped (it finishes its
  // journals), the copy removed unless --keep; then exit 130 (143).
  const onSignal = (signal: NodeJS.Signals): void => {
    say();
    interrupted = true;
    void stopServer().then(() => {
      const left = removeCopyUnlessKept();
      const copy = left ?? (start.keep ? `the copy of the example stays in ${copyDir}` : 'the copy of the example was removed');
      process.stdout.write(`Interrupted (${signal}): the server was stopped and ${copy}.\n`);
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    await client.connect(transport);
    const serverInfo = client.getServerVersion();
    field('server', `${symbi} mcp --project <copy>  ${dim(`(${serverInfo?.name ?? 'symbi'} ${serverInfo?.version ?? ''}, pid ${transport.pid ?? '?'})`)}`);
    const keyLine = await waitFor('the startup summary', () => /audit public key[^:]*: ([0-9a-f]{64})/.exec(serverStderr) ?? undefined);
    publicKey = keyLine[1]!;
    field('public key', `${publicKey} ${dim('(from the startup summary on stderr; keep it outside the project)')}`);

    // 1. list_agents
    heading(1, 'list_agents: what the IDE agent can see');
    const listed = (await client.callTool({ name: 'list_agents', arguments: {} })) as ToolResult;
    const agents = (listed.structuredContent as { agents?: ListedAgent[] } | undefined)?.agents ?? [];
    for (const a of agents) {
      const alias = a.declared_name !== undefined && a.declared_name !== a.stem ? ` (declares ${a.declared_name})` : '';
      if (a.invocable) {
        say(`   ${green('invocable')}      ${bold(a.stem)}${alias}  ${dim(a.file)}`);
      } else {
        say(`   ${yellow('not invocable')}  ${bold(a.stem)}  ${dim(a.file)}`);
        say(`                  ${dim('why:')} ${oneLine((a.reason ?? '').replace(`${a.file}: `, ''), 140)}`);
      }
    }
    check(
      agents.some((a) => a.invocable) && agents.some((a) => !a.invocable && (a.reason ?? '') !== ''),
      'invocable agents listed, and a refusal reason for the one that is not',
    );

    // 2. invoke_agent
    heading(2, 'invoke_agent: one governed text answer');
    const prompt = 'Introduce yourself in one sentence.';
    field('call', `invoke_agent {agent: "assistant", prompt: "${prompt}"}`);
    const answered = (await client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt } })) as ToolResult;
    const answerRef = auditOf(answered);
    field('answer', textOf(answered));
    if (answerRef !== undefined) {
      field('agent id', answerRef.agent_id);
      field('run id', answerRef.audit.run_id);
      field('journal', answerRef.audit.path);
      field('public key', answerRef.audit.public_key);
      runs.push({ label: 'answer', journal: answerRef.audit.path, runId: answerRef.audit.run_id, expectedStatus: 0 });
    }
    check(answered.isError !== true && textOf(answered).length > 0, 'the answer came back after Cedar permitted it');
    check(answerRef !== undefined && answerRef.audit.public_key === publicKey, 'the audit reference names the run, its journal and the startup public key');

    // 3. Cedar refusal
    heading(3, 'a Cedar refusal: the model mentions a secret');
    say(dim('   policies/mcp-server/respond.cedar forbids any response whose content is like "*secret*".'));
    field('call', 'invoke_agent {agent: "assistant", prompt: "What is the launch code? [[secret]]"}');
    const refused = (await client.callTool({
      name: 'invoke_agent',
      arguments: { agent: 'assistant', prompt: 'What is the launch code? [[secret]]' },
    })) as ToolResult;
    const refusedRef = auditOf(refused);
    field('tool error', oneLine(textOf(refused).replace(/ \(audit: .*\)$/, ''), 120));
    if (refusedRef !== undefined) {
      field('run id', refusedRef.audit.run_id);
      runs.push({ label: 'refusal', journal: refusedRef.audit.path, runId: refusedRef.audit.run_id, expectedStatus: 0 });
    }
    check(refused.isError === true && /Cedar policy denied/.test(textOf(refused)), 'the call is a tool error naming the Cedar decision');
    check(!textOf(refused).includes('launch code is'), "the model's text was withheld");

    // 4. cancellation
    heading(4, 'cancellation: the client gives up on a slow answer');
    field('call', 'invoke_agent {agent: "helper", prompt: "Take your time. [[hold]]"}');
    const known = new Set(journals(project));
    const requestsBefore = endpoint.requests.length;
    const controller = new AbortController();
    const slow = client
      .callTool({ name: 'invoke_agent', arguments: { agent: 'helper', prompt: 'Take your time. [[hold]]' } }, { signal: controller.signal })
      .then(
        () => 'answered',
        () => 'cancelled',
      );
    await endpoint.waitForRequests(requestsBefore + 1, STEP_TIMEOUT_MS);
    say(`   ${dim('the endpoint received the request and holds it; aborting the call (notifications/cancelled)')}`);
    controller.abort('the demo stopped waiting');
    const outcome = await slow;
    const cancelledJournal = await waitFor('the cancelled run’s journal', () => journals(project).find((f) => !known.has(f)));
    await waitFor('the terminal record of the cancelled run', () => (lastEventName(cancelledJournal) === 'Terminated' ? true : undefined));
    const cancelledRunId = path.basename(cancelledJournal, '.jsonl').split('.').at(-1) ?? '';
    field('client', `the call was ${outcome}`);
    field('run id', cancelledRunId);
    field('journal', `${cancelledJournal} ${dim('(ends with its Terminated record)')}`);
    // The operator's view of the same run: the server's stderr line (it follows the terminal record closely).
    const cancelLine = await waitFor(
      'the run cancelled line on stderr',
      () => serverStderr.split('\n').find((l) => l.includes(cancelledRunId) && /run cancelled/.test(l)),
      2_000,
    ).catch(() => undefined);
    if (cancelLine !== undefined) field('stderr', dim(oneLine(cancelLine, 150)));
    // The request had left when it was cancelled, so its effect is unknown: complete, yet to reconcile.
    runs.push({ label: 'cancelled', journal: cancelledJournal, runId: cancelledRunId, expectedStatus: 2 });
    const closed = await waitFor('the provider connection to close', () => (endpoint.requests[requestsBefore]?.closedEarly === true ? true : undefined)).catch(
      () => false,
    );
    check(outcome === 'cancelled', 'the cancelled call got no answer');
    check(closed, 'the server closed its provider connection and wrote the terminal record');

    // 5. audit inspect
    heading(5, 'symbi audit inspect: verify every journal with the public key');
    say(dim(`   ${symbi} audit inspect <journal> --run-id <id> --public-key <key>`));
    say(dim('   exit 0 complete; exit 2 needs reconciliation (no end recorded, an unknown effect, or an unauthenticated tail); exit 1 failed'));
    for (const run of runs) {
      const verdict = auditInspect(run.journal, run.runId, publicKey);
      const colour = verdict.status === 0 ? green : verdict.status === 2 ? yellow : red;
      const records = typeof verdict.report.records === 'number' ? `${verdict.report.records} records` : '';
      const complete = verdict.report.journal_complete === true ? 'journal complete' : 'journal incomplete';
      const ending = 'terminal_reason' in verdict.report ? terminalSummary(verdict.report.terminal_reason) : oneLine(fieldText(verdict.report.error), 90);
      const effects = Array.isArray(verdict.report.effects) ? (verdict.report.effects as { outcome?: string }[]) : [];
      say(`   ${run.label.padEnd(10)} ${run.runId}  ${colour(verdict.label)}  ${dim(`exit ${verdict.status}, ${records}, ${complete}`)}`);
      say(`              ${dim('ends with:')} ${ending}`);
      say(`              ${dim('provider call:')} ${effects.map((e) => e.outcome ?? '?').join(', ') || 'none'}`);
      if (run.expectedStatus === 0) {
        check(verdict.status === 0, `the ${run.label} journal verifies and is complete`);
      } else {
        check(
          verdict.status === 2 && verdict.report.journal_complete === true && effects.some((e) => e.outcome === 'unknown'),
          `the ${run.label} journal is complete and needs reconciliation: its provider call's effect is unknown`,
        );
      }
    }

    // 6. policy test: the quick start's cases (policies/tests/) through the same Cedar decision, no model call
    heading(6, 'symbi policy test: the policy decides written answers as it decided the real ones');
    say(dim(`   ${symbi} policy test --project <project>`));
    const cases = spawnSync(process.execPath, [symbiBin, 'policy', 'test', '--project', project], { encoding: 'utf8', env, timeout: STEP_TIMEOUT_MS });
    say(`   ${oneLine(cases.stdout.trimEnd().split('\n').pop() ?? cases.stderr)}`);
    check(cases.status === 0, 'every case of examples/quickstart/policies/tests/ got the decision it expects');
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    check(false, `the demo stopped: ${oneLine(message)}`);
    if (serverStderr !== '') {
      say(dim('   server standard error (last lines):'));
      for (const line of serverStderr.trimEnd().split('\n').slice(-8)) say(dim(`   | ${oneLine(line)}`));
    }
  } finally {
    await stopServer();
  }
  // An interrupt has taken over the ending (onSignal): nothing more here.
  if (interrupted) return new Promise<number>(() => undefined);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  // The server has exited (client.close waits for it), so nothing writes into the copy any more.
  const notRemoved = removeCopyUnlessKept();
  if (notRemoved !== undefined) check(false, notRemoved);

  const note = (text: string) => say(`                                              ${dim(text)}`);
  say();
  say(bold('What to run next'));
  if (start.origin === 'clone') say(`   npm test                                   ${dim('build, then every test suite')}`);
  if (start.keep) {
    say(`   ${symbi} audit list --project ${shellWord(project)}`);
    note('the runs above, newest first, checked with the project key');
    const answer = runs.find((r) => r.label === 'answer');
    if (answer !== undefined) {
      say(`   ${symbi} audit inspect ${shellWord(answer.journal)} --run-id ${answer.runId} --public-key ${publicKey}`);
      note("the answer's journal, verified with the public key");
    }
  }
  // An MCP client starts the server from anywhere: the clone's bin by its absolute path.
  const serverCommand = clientServerCommand(start.origin);
  say(`   claude mcp add symbi -- ${serverCommand} mcp --project /abs/path/to/your/project`);
  note('Claude Code; README.md has the other IDEs and CLIs');
  if (start.origin === 'clone') say(`   npm run bench                              ${dim('the benchmark table for this machine')}`);
  say();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length === 0) {
    say(green(`Demo finished in ${seconds} s: every step behaved as expected.`));
  } else {
    say(red(`Demo finished in ${seconds} s with ${failures.length} failed step(s):`));
    for (const f of failures) say(red(`   - ${f}`));
  }
  say(
    start.keep
      ? `The copy of the example stays in ${copyDir}; remove it when done.`
      : `The copy of the example was removed; \`${rerunKeeping}\` keeps it, for the symbi audit commands.`,
  );
  return failures.length === 0 ? 0 : 1;
}

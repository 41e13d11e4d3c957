// A caller trying to exhaust the server's memory, at the sizes of issue 22, through the real stdio of
// the built server (`npm run build` first):
//   1. a client sends 1,500 get_agent_dsl calls for a 1 MiB agent and reads nothing for a while, then
//      reads: every answer must arrive, and the server's peak RSS stay under 600 MB;
//   2. a client sends 3,000 invoke_agent calls with a 4 KiB prompt and a 4 KiB system_prompt to a
//      provider that never answers (issue 22's 64 KiB texts are valid arguments, but a run stops them at
//      its token budget before any provider request, as Symbiont's does; 4 KiB each is about the largest
//      pair whose request the budget still sends): the calls beyond the capacity are refused at once, the server's
//      peak RSS stays under 1 GiB, and after shutdown every accepted run's journal is complete.
// Usage: node --import tsx scripts/bench/bench-flood.ts [--dsl-calls 1500] [--unread-seconds 10] [--invoke-calls 3000]
// Progress goes to standard error; the last line on standard output is `BENCH_JSON {...}`.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { signingKeyFromSeed } from '../../src/shared/signing/signing-key.js';
import { DSL_FILE_MAX_BYTES, INVOCATIONS_MAX_DEFAULT } from '../../src/shared/limits.js';

/** The prompt's and the system_prompt's size: the largest round size whose request the route's token budget still sends (above). */
const FLOOD_TEXT_BYTES = 4 * 1024;
import { startSyntheticEndpoint } from '../../test/support/synthetic-endpoint.js';

const { values } = parseArgs({
  options: {
    'dsl-calls': { type: 'string', default: '1500' },
    'unread-seconds': { type: 'string', default: '10' },
    'invoke-calls': { type: 'string', default: '3000' },
  },
});
const dslCalls = Number(values['dsl-calls']);
const unreadSeconds = Number(values['unread-seconds']);
const invokeCalls = Number(values['invoke-calls']);
if (![dslCalls, unreadSeconds, invokeCalls].every((n) => Number.isInteger(n) && n >= 1)) {
  process.stderr.write('usage: bench-flood [--dsl-calls N>=1] [--unread-seconds S>=1] [--invoke-calls N>=1]\n');
  process.exit(2);
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const symbiBin = path.join(repoRoot, 'bin', 'symbi.js');
const say = (line: string): void => void process.stderr.write(`bench-flood: ${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-flood', version: '1' } },
};
const line = (message: unknown): string => `${JSON.stringify(message)}\n`;

/** The server's peak RSS so far (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(hwm?.[1] ?? 0) / 1024);
}

function tempProject(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-flood-'));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

function startServer(project: string, env: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, [symbiBin, 'mcp', '--project', project], { stdio: ['pipe', 'pipe', 'pipe'], env });
  child.stderr.resume();
  child.stdin.on('error', () => undefined);
  return child;
}

/** Counts answer lines (by id) as they arrive, without parsing the big ones. */
function countAnswers(
  child: ChildProcessWithoutNullStreams,
  onLine?: (text: string) => void,
): { count(): number; until(n: number, timeoutMs: number): Promise<void> } {
  let answers = 0;
  let partial: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      partial.push(chunk.subarray(start, newline));
      answers += 1;
      if (onLine !== undefined) onLine(Buffer.concat(partial).toString('utf8'));
      partial = [];
      start = newline + 1;
    }
    if (start < chunk.length) partial.push(chunk.subarray(start));
  });
  return {
    count: () => answers,
    until: async (n, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (answers < n) {
        if (Date.now() > deadline) throw new Error(`only ${answers} of ${n} answers within ${timeoutMs} ms`);
        await sleep(50);
      }
    },
  };
}

async function exitOf(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function unreadAnswers(): Promise<Record<string, number>> {
  const head = 'agent big {\n}\n';
  const commentLine = `// ${'x'.repeat(1021)}\n`;
  const source = head + commentLine.repeat(Math.floor((DSL_FILE_MAX_BYTES - head.length) / commentLine.length));
  const project = tempProject({ 'agents/big.symbi': source });
  const child = startServer(project, { PATH: process.env.PATH ?? '', HOME: os.tmpdir() });
  try {
    const initialized = new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdin.write(line(INITIALIZE));
    await initialized;
    child.stdout.pause();
    child.stdin.write(line({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    let requests = '';
    for (let id = 1; id <= dslCalls; id++)
      requests += line({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_agent_dsl', arguments: { agent: 'big' } } });
    child.stdin.write(requests);
    say(`${dslCalls} get_agent_dsl calls for a ${Math.round(source.length / 1024)} KiB agent sent; not reading for ${unreadSeconds} s`);
    await sleep(unreadSeconds * 1000);
    const unreadPeak = peakRssMb(child.pid!);
    const readingFrom = Date.now();
    const reader = countAnswers(child);
    child.stdout.resume();
    await reader.until(dslCalls, 600_000);
    const readSeconds = (Date.now() - readingFrom) / 1000;
    const peak = peakRssMb(child.pid!);
    say(`peak RSS ${unreadPeak} MB while unread, ${peak} MB overall; all ${reader.count()} answers read in ${readSeconds.toFixed(1)} s`);
    child.stdin.end();
    await exitOf(child);
    return {
      dsl_calls: dslCalls,
      dsl_answers: reader.count(),
      dsl_unread_peak_rss_mb: unreadPeak,
      dsl_peak_rss_mb: peak,
      dsl_read_seconds: Number(readSeconds.toFixed(1)),
    };
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(project, { recursive: true, force: true });
  }
}

async function invocationFlood(): Promise<Record<string, number>> {
  const endpoint = await startSyntheticEndpoint({ defaultMode: 'hold' });
  const project = tempProject({ 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' });
  const child = startServer(project, {
    PATH: process.env.PATH ?? '',
    HOME: os.tmpdir(),
    OPENAI_BASE_URL: endpoint.url,
    OPENAI_API_KEY: 'flood',
    CHAT_MODEL: 'synthetic',
  });
  let refused = 0;
  let other = 0;
  try {
    const reader = countAnswers(child, (text) => {
      if (text.includes('the server is at capacity')) refused += 1;
      else other += 1;
    });
    child.stdin.write(line(INITIALIZE));
    await reader.until(1, 30_000);
    child.stdin.write(line({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const prompt = 'p'.repeat(FLOOD_TEXT_BYTES);
    const systemPrompt = 's'.repeat(FLOOD_TEXT_BYTES);
    const started = Date.now();
    for (let id = 1; id <= invokeCalls; id++) {
      const ok = child.stdin.write(
        line({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'invoke_agent', arguments: { agent: 'assistant', prompt, system_prompt: systemPrompt } },
        }),
      );
      if (!ok) await new Promise((resolve) => child.stdin.once('drain', resolve));
    }
    const expectedAccepted = Math.min(invokeCalls, INVOCATIONS_MAX_DEFAULT);
    await reader.until(1 + invokeCalls - expectedAccepted, 600_000);
    await endpoint.waitForRequests(expectedAccepted, 120_000);
    const floodSeconds = (Date.now() - started) / 1000;
    const peak = peakRssMb(child.pid!);
    say(
      `${invokeCalls} invoke_agent calls in ${floodSeconds.toFixed(1)} s: ${refused} refused at capacity, ${endpoint.requests.length} holding at the provider; peak RSS ${peak} MB`,
    );
    const shutdownFrom = Date.now();
    child.stdin.end();
    const code = await exitOf(child);
    const shutdownSeconds = (Date.now() - shutdownFrom) / 1000;
    const seed = fs.readFileSync(path.join(project, '.symbiont', 'governed', 'audit-signing.key'));
    const publicKey = signingKeyFromSeed(seed).publicKeyHex;
    const governed = path.join(project, '.symbiont', 'governed');
    const journals = fs.readdirSync(governed).filter((n) => n.endsWith('.jsonl'));
    const complete = journals.filter(
      (n) =>
        inspectJournal(
          path.join(governed, n),
          n
            .replace(/\.jsonl$/, '')
            .split('.')
            .at(-1)!,
          publicKey,
        ).report.journal_complete,
    ).length;
    say(`shutdown (exit ${code}) in ${shutdownSeconds.toFixed(1)} s: ${complete} of ${journals.length} journals complete; ${other - 1} other answers`);
    return {
      invoke_calls: invokeCalls,
      invoke_text_bytes: FLOOD_TEXT_BYTES,
      invoke_refused_at_capacity: refused,
      invoke_accepted: journals.length,
      invoke_journals_complete: complete,
      invoke_provider_calls: endpoint.requests.length,
      invoke_peak_rss_mb: peak,
      invoke_flood_seconds: Number(floodSeconds.toFixed(1)),
      invoke_shutdown_seconds: Number(shutdownSeconds.toFixed(1)),
    };
  } finally {
    child.kill('SIGKILL');
    await endpoint.close();
    fs.rmSync(project, { recursive: true, force: true });
  }
}

const result: Record<string, number> = { ...(await unreadAnswers()), ...(await invocationFlood()), max_invocations: INVOCATIONS_MAX_DEFAULT };
process.stdout.write(
  [
    `flood: ${result.dsl_answers} of ${result.dsl_calls} unread 1 MiB get_agent_dsl answers delivered; server peak RSS ${result.dsl_peak_rss_mb} MB (target < 600 MB)`,
    `flood: ${result.invoke_calls} invoke_agent calls with ${FLOOD_TEXT_BYTES / 1024} KiB prompt and system_prompt to a silent provider: ${result.invoke_refused_at_capacity} refused at capacity (${result.max_invocations}), ${result.invoke_journals_complete} of ${result.invoke_accepted} journals complete after shutdown; server peak RSS ${result.invoke_peak_rss_mb} MB (target < 1,024 MB)`,
    `BENCH_JSON ${JSON.stringify(result)}`,
  ].join('\n') + '\n',
);

// `npm run bench`: runs every benchmark script of the project, one after the other, each as its own
// child process (`node --import tsx scripts/<name>.ts`), reads the `BENCH_JSON {...}` line each prints
// last, and prints one table: the machine, the date, and each figure beside its peer and its target.
// The same table follows as markdown, ready to paste into the README.
//
// Usage: node --import tsx scripts/bench.ts [--only server,parse,journal,policy,invoke,stress-cancel,soak]
// The benchmark scripts' own progress output goes to standard error; the table goes to standard output.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The 20,000-call soak takes the longest (2 to 4 minutes here); nothing should come near this.
const CHILD_TIMEOUT_MS = 20 * 60_000;

type Json = Record<string, unknown>;

interface Row {
  figure: string;
  measured: string;
  peer: string;
  target: string;
  /** undefined when the figure has no target. */
  met: boolean | undefined;
}

interface Benchmark {
  name: string;
  script: string;
  rows(j: Json): Row[];
}

function num(j: Json, key: string): number {
  const value = j[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`BENCH_JSON has no number "${key}"`);
  return value;
}

function fmt(n: number, digits = 3): string {
  // Enough significant digits to compare, without a wall of decimals.
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return Number(n.toPrecision(digits)).toString();
}

function timing(j: Json, key: string): { p50_ms: number; p99_ms: number } {
  const value = j[key] as { p50_ms?: unknown; p99_ms?: unknown } | undefined;
  if (typeof value?.p50_ms !== 'number' || typeof value.p99_ms !== 'number') throw new Error(`BENCH_JSON has no timing "${key}"`);
  return { p50_ms: value.p50_ms, p99_ms: value.p99_ms };
}

const BENCHMARKS: Benchmark[] = [
  {
    name: 'server',
    script: 'bench-server.ts',
    rows: (j) => [
      {
        figure: 'get_agent_dsl round trip, p50 / p99',
        measured: `${fmt(num(j, 'get_agent_dsl_p50_ms'))} / ${fmt(num(j, 'get_agent_dsl_p99_ms'))} ms`,
        peer: `server-filesystem read_text_file: ${fmt(num(j, 'read_text_file_p50_ms'))} / ${fmt(num(j, 'read_text_file_p99_ms'))} ms`,
        target: `p50 ratio <= 1.0 (is ${fmt(num(j, 'p50_ratio'))})`,
        met: num(j, 'p50_ratio') <= 1.0,
      },
      {
        figure: 'startup to initialize, 1,000 agents',
        measured: `${fmt(num(j, 'startup_1000_agents_ms'))} ms`,
        peer: `bare SDK server: ${fmt(num(j, 'startup_bare_ms'))} ms`,
        target: `ratio <= 1.3 (is ${fmt(num(j, 'startup_ratio'))})`,
        met: num(j, 'startup_ratio') <= 1.3,
      },
    ],
  },
  {
    name: 'parse',
    script: 'bench-parse.ts',
    rows: (j) => [
      {
        figure: `parse_dsl round trip, largest Symbiont example agent (${String(j['sample'])}), p50 / p99`,
        measured: `${fmt(num(j, 'parse_dsl_p50_ms'))} / ${fmt(num(j, 'parse_dsl_p99_ms'))} ms`,
        peer: `in-process parse and report: ${fmt(num(j, 'in_process_p50_ms'))} / ${fmt(num(j, 'in_process_p99_ms'))} ms`,
        target: 'p50 <= 1 ms',
        met: num(j, 'parse_dsl_p50_ms') <= 1,
      },
    ],
  },
  {
    name: 'journal',
    script: 'bench-journal.ts',
    rows: (j) => [
      {
        figure: 'journal writer per record with fdatasync, p50 / p99',
        measured: `${fmt(num(j, 'writer_p50_ms'))} / ${fmt(num(j, 'writer_p99_ms'))} ms`,
        peer: '',
        target: 'p50 <= 0.5 ms',
        met: num(j, 'writer_p50_ms') <= 0.5,
      },
      {
        figure: 'journal verification (audit inspect), 10,000 records',
        measured: `${fmt(num(j, 'verify_records_per_s'))} records/s`,
        peer: `with --cross-check (tweetnacl too): ${fmt(num(j, 'verify_cross_check_records_per_s'))} records/s`,
        target: '>= 5,000 records/s',
        met: num(j, 'verify_records_per_s') >= 5000,
      },
    ],
  },
  {
    name: 'policy',
    script: 'bench-policy.ts',
    rows: (j) => {
      const exact = timing(j, 'authorizeRespond');
      const partial = timing(j, 'canPermitSomeResponse');
      const cached = timing(j, 'canPermitSomeResponse_cached');
      return [
        { figure: 'Cedar respond decision on the exact text, p50 / p99', measured: `${fmt(exact.p50_ms)} / ${fmt(exact.p99_ms)} ms`, peer: '', target: '', met: undefined },
        {
          figure: 'Cedar before inference (partial evaluation), p50 / p99',
          measured: `${fmt(partial.p50_ms)} / ${fmt(partial.p99_ms)} ms`,
          peer: `cached verdict: ${fmt(cached.p50_ms)} / ${fmt(cached.p99_ms)} ms`,
          target: '',
          met: undefined,
        },
      ];
    },
  },
  {
    name: 'invoke',
    script: 'bench-invoke.ts',
    rows: (j) => [
      {
        figure: 'invoke_agent round trip, zero-delay endpoint, p50 / p99',
        measured: `${fmt(num(j, 'governed_p50_ms'))} / ${fmt(num(j, 'governed_p99_ms'))} ms`,
        peer: `bare SDK tool, same HTTP call: ${fmt(num(j, 'bare_p50_ms'))} / ${fmt(num(j, 'bare_p99_ms'))} ms`,
        target: `p50 ratio <= 4 (is ${fmt(num(j, 'p50_ratio'))})`,
        met: num(j, 'p50_ratio') <= 4,
      },
      { figure: 'invoke_agent throughput, 64 concurrent', measured: `${fmt(num(j, 'throughput_64_per_s'))} /s`, peer: '', target: '>= 300 /s', met: num(j, 'throughput_64_per_s') >= 300 },
      { figure: '256 concurrent calls to a 1 s endpoint, wall time', measured: `${fmt(num(j, 'slow_256_wall_s'))} s`, peer: '', target: '<= 1.5 s', met: num(j, 'slow_256_wall_s') <= 1.5 },
      { figure: '256 concurrent calls, server peak RSS', measured: `${fmt(num(j, 'peak_rss_mb'))} MB`, peer: '', target: '< 300 MB', met: num(j, 'peak_rss_mb') < 300 },
    ],
  },
  {
    name: 'stress-cancel',
    script: 'stress-cancel.ts',
    rows: (j) => [
      {
        figure: `stress-cancel: ${fmt(num(j, 'invocations'))} calls at ${fmt(num(j, 'concurrency'))} concurrent, ${fmt(num(j, 'cancelled'))} cancelled: lost journals`,
        measured: `${fmt(num(j, 'lost'))} (${fmt(num(j, 'journals_verified'))} of ${fmt(num(j, 'journals_expected'))} verified)`,
        peer: '',
        target: '0',
        met: num(j, 'lost') === 0,
      },
      { figure: 'stress-cancel: provider connections open after cancel', measured: fmt(num(j, 'open_connections_after_cancel')), peer: '', target: '0', met: num(j, 'open_connections_after_cancel') === 0 },
      {
        figure: 'stress-cancel: cancel to terminal record, p50 / p99',
        measured: `${fmt(num(j, 'cancel_to_terminal_p50_ms'))} / ${fmt(num(j, 'cancel_to_terminal_p99_ms'))} ms`,
        peer: '',
        target: 'p99 <= 50 ms',
        met: num(j, 'cancel_to_terminal_p99_ms') <= 50,
      },
      { figure: 'stress-cancel: server peak RSS', measured: `${fmt(num(j, 'server_peak_rss_mb'))} MB`, peer: '', target: '< 300 MB', met: num(j, 'server_peak_rss_mb') < 300 },
    ],
  },
  {
    name: 'soak',
    script: 'soak.ts',
    rows: (j) => {
      const requested = num(j, 'calls_requested');
      const completed = num(j, 'calls_completed');
      const crashes = num(j, 'process_crashes');
      return [
        {
          figure: `soak: mixed session at concurrency ${fmt(num(j, 'concurrency'))} (${num(j, 'calls_per_s')} calls/s), calls completed / process crashes`,
          measured: `${completed.toLocaleString('en-US')} of ${requested.toLocaleString('en-US')} / ${crashes}`,
          peer: '',
          target: 'all / 0',
          met: completed === requested && crashes === 0,
        },
        {
          figure: 'soak: journals lost or failing (audit inspect)',
          measured: `${fmt(num(j, 'journals_lost'))} of ${num(j, 'journals_expected').toLocaleString('en-US')}`,
          peer: `complete ${num(j, 'journals_complete').toLocaleString('en-US')}; cancelled, needing reconciliation ${fmt(num(j, 'journals_needing_reconciliation'))}`,
          target: '0',
          met: num(j, 'journals_lost') === 0,
        },
        {
          figure: 'RSS after startup and initialize, no invocation yet',
          measured: `${fmt(num(j, 'idle_rss_mb'))} MB`,
          peer: `bare SDK server: ${fmt(num(j, 'bare_idle_rss_mb'))} MB`,
          target: `ratio <= 1.5 (is ${fmt(num(j, 'idle_ratio'))})`,
          met: num(j, 'idle_ratio') <= 1.5,
        },
        {
          figure: 'soak: server RSS start / peak / end',
          measured: `${fmt(num(j, 'rss_start_mb'))} / ${fmt(num(j, 'rss_peak_mb'))} / ${fmt(num(j, 'rss_end_mb'))} MB`,
          peer: '',
          target: 'peak < 250 MB',
          met: num(j, 'rss_peak_mb') < 250,
        },
        {
          figure: `soak: RSS rise fitted from ${fmt(num(j, 'rss_trend_from_call'))} calls to the end`,
          measured: `${fmt(num(j, 'rss_trend_mb'))} MB`,
          peer: '',
          target: 'no upward trend (< 16 MB)',
          met: j['rss_flat'] === true,
        },
        {
          figure: 'soak: open descriptors / threads, start -> end',
          measured: `${fmt(num(j, 'fds_start'))} -> ${fmt(num(j, 'fds_end'))} / ${fmt(num(j, 'threads_start'))} -> ${fmt(num(j, 'threads_end'))}`,
          peer: '',
          target: 'flat',
          met: j['fds_flat'] === true && j['threads_flat'] === true,
        },
      ];
    },
  },
];

const ALIASES: Record<string, string> = { stress: 'stress-cancel' };

function usageError(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

function selectBenchmarks(argv: string[]): Benchmark[] {
  let only: string[] | undefined;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === '--only' || arg.startsWith('--only=')) {
      const value = arg === '--only' ? argv[++i] : arg.slice('--only='.length);
      if (value === undefined || value.trim() === '') usageError(`--only needs a comma-separated list (allowed: ${BENCHMARKS.map((b) => b.name).join(', ')})`);
      only = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`usage: npm run bench [-- --only ${BENCHMARKS.map((b) => b.name).join(',')}]\n`);
      process.exit(0);
    } else {
      usageError(`unknown argument "${arg.length > 40 ? `${arg.slice(0, 40)}…` : arg}" (allowed: --only name,name)`);
    }
  }
  if (only === undefined) return BENCHMARKS;
  const wanted = new Set(only.map((n) => ALIASES[n] ?? n));
  for (const name of wanted) {
    if (!BENCHMARKS.some((b) => b.name === name)) {
      usageError(`unknown benchmark "${name.length > 40 ? `${name.slice(0, 40)}…` : name}" (allowed: ${BENCHMARKS.map((b) => b.name).join(', ')})`);
    }
  }
  return BENCHMARKS.filter((b) => wanted.has(b.name));
}

interface ChildOutcome {
  json: Json | undefined;
  problem: string | undefined;
}

function runBenchmark(bench: Benchmark): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'scripts', bench.script)], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lastJson: string | undefined;
    let pending = '';
    const timer = setTimeout(() => child.kill('SIGTERM'), CHILD_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('BENCH_JSON ')) lastJson = line.slice('BENCH_JSON '.length);
        else process.stderr.write(`  ${bench.name} | ${line}\n`);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ json: undefined, problem: `could not start: ${error.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (pending.startsWith('BENCH_JSON ')) lastJson = pending.slice('BENCH_JSON '.length);
      const exit = signal !== null ? `killed by ${signal}` : `exit status ${code}`;
      if (lastJson === undefined) {
        resolve({ json: undefined, problem: `no BENCH_JSON line (${exit})` });
        return;
      }
      try {
        const json = JSON.parse(lastJson) as Json;
        resolve({ json, problem: code === 0 ? undefined : `${exit}` });
      } catch {
        resolve({ json: undefined, problem: `BENCH_JSON line is not JSON (${exit})` });
      }
    });
  });
}

function machineDescription(): string[] {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim().replace(/\s+/g, ' ') ?? 'unknown CPU';
  const memGiB = (os.totalmem() / 1024 ** 3).toFixed(1);
  const load = os.loadavg().map((n) => n.toFixed(2)).join(' ');
  return [
    `machine: ${model}, ${cpus.length} logical CPUs, ${memGiB} GiB memory, ${os.type()} ${os.release()} ${os.arch()}`,
    `node: ${process.version}; date: ${new Date().toISOString()}; load average at the end: ${load}`,
  ];
}

function metText(met: boolean | undefined): string {
  return met === undefined ? '-' : met ? 'yes' : 'no';
}

function plainTable(rows: Row[]): string {
  const header = ['figure', 'measured', 'peer', 'target', 'met'];
  const cells = [header, ...rows.map((r) => [r.figure, r.measured, r.peer || '-', r.target || '-', metText(r.met)])];
  const widths = header.map((_, c) => Math.max(...cells.map((row) => row[c]!.length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

function markdownTable(rows: Row[]): string {
  const escape = (s: string) => s.replace(/\|/g, '\\|');
  return [
    '| figure | measured | peer | target | met |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${escape(r.figure)} | ${escape(r.measured)} | ${escape(r.peer)} | ${escape(r.target)} | ${metText(r.met)} |`),
  ].join('\n');
}

async function main(): Promise<number> {
  const selected = selectBenchmarks(process.argv.slice(2));
  if (!fs.existsSync(path.join(repoRoot, 'bundle', 'supervisor', 'cli.js'))) {
    process.stderr.write('bench: the package is not built; running npm run build\n');
    const build = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: ['ignore', process.stderr, process.stderr] });
    if (build.status !== 0) {
      process.stderr.write('bench: the build failed; fix it and run npm run bench again\n');
      return 1;
    }
  }

  const rows: Row[] = [];
  let failed = 0;
  for (const bench of selected) {
    process.stderr.write(`bench: running ${bench.script} ...\n`);
    const started = Date.now();
    const outcome = await runBenchmark(bench);
    process.stderr.write(`bench: ${bench.script} finished in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    if (outcome.json === undefined) {
      failed += 1;
      rows.push({ figure: `${bench.name}: did not report`, measured: outcome.problem ?? 'no figures', peer: '', target: '', met: false });
      continue;
    }
    try {
      rows.push(...bench.rows(outcome.json));
    } catch (error) {
      failed += 1;
      rows.push({ figure: `${bench.name}: unreadable figures`, measured: error instanceof Error ? error.message : String(error), peer: '', target: '', met: false });
      continue;
    }
    if (outcome.problem !== undefined) {
      // A script that printed figures but failed (stress-cancel exits 1 when a journal is lost) still counts as a failure.
      failed += 1;
      process.stderr.write(`bench: ${bench.script} reported figures but ended with ${outcome.problem}\n`);
    }
  }

  const machine = machineDescription();
  const out: string[] = [];
  out.push('');
  out.push('symbi-mcp benchmarks');
  out.push(...machine);
  out.push('');
  out.push(plainTable(rows));
  out.push('');
  out.push('Markdown, for the README:');
  out.push('');
  out.push(...machine.map((l) => `${l}  `));
  out.push('');
  out.push(markdownTable(rows));
  out.push('');
  process.stdout.write(`${out.join('\n')}\n`);
  const missed = rows.filter((r) => r.met === false).length;
  process.stderr.write(`bench: ${rows.length} figures, ${missed} below target${failed > 0 ? `, ${failed} benchmark(s) failed` : ''}\n`);
  return failed > 0 ? 1 : 0;
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);

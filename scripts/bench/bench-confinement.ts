// Confinement routes side by side: what one project file read costs through
// each route (wall and CPU time per readTextFile of agents/<name>.symbi, the
// path get_agent_dsl and parse_dsl {file} take), what listing a 100-entry
// agents/ costs, and what each route's startup self-test costs. Routes this
// machine cannot prove are reported as unavailable with the reason.
// Run: node --import tsx scripts/bench/bench-confinement.ts [--reads N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ROUTE_NAMES } from '../../src/shared/confinement/descriptor-route.js';
import { pinProject } from '../../src/shared/confinement/index.js';
import { checkDescriptorAccess } from '../../src/shared/confinement/route-choice.js';
import { DSL_FILE_MAX_BYTES, DISCOVERY_MAX_ENTRIES } from '../../src/shared/limits.js';

const readsArg = process.argv.indexOf('--reads');
const READS = readsArg > 0 ? Number(process.argv[readsArg + 1]) : 20_000;
const LISTINGS = 2_000;
const SELF_TESTS = 20;
const AGENT_FILES = 100;

const round = (n: number, digits = 2) => Number(n.toFixed(digits));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-confinement-'));
const result: Record<string, unknown> = { bench: 'confinement', reads: READS, platform: `${process.platform} ${process.arch}` };
try {
  fs.mkdirSync(path.join(dir, 'agents'));
  for (let i = 0; i < AGENT_FILES; i++) {
    fs.writeFileSync(path.join(dir, 'agents', `agent${i}.symbi`), `agent agent${i} {\n  capabilities = ["answer"]\n}\n`);
  }
  for (const route of ROUTE_NAMES) {
    const env = { SYMBI_CONFINEMENT_ROUTE: route };
    const access = checkDescriptorAccess(env);
    if (!access.available) {
      result[`${route}_unavailable`] = access.reason;
      console.log(`${route}: unavailable: ${access.reason}`);
      continue;
    }
    const selfTestStart = performance.now();
    for (let i = 0; i < SELF_TESTS; i++) checkDescriptorAccess(env);
    const selfTestMs = (performance.now() - selfTestStart) / SELF_TESTS;

    const project = pinProject(dir, env);
    for (let i = 0; i < 1000; i++) project.readTextFile(`agents/agent${i % AGENT_FILES}.symbi`, DSL_FILE_MAX_BYTES);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < READS; i++) project.readTextFile(`agents/agent${i % AGENT_FILES}.symbi`, DSL_FILE_MAX_BYTES);
    const wallUs = ((performance.now() - t0) * 1000) / READS;
    const cpu = process.cpuUsage(cpu0);
    const cpuUs = (cpu.user + cpu.system) / READS;

    const agentsFd = project.openDirectory(['agents']);
    const l0 = performance.now();
    for (let i = 0; i < LISTINGS; i++) project.route.list(agentsFd, DISCOVERY_MAX_ENTRIES);
    const listUs = ((performance.now() - l0) * 1000) / LISTINGS;
    fs.closeSync(agentsFd);
    fs.closeSync(project.fd);

    result[`${route}_read_us`] = round(wallUs);
    result[`${route}_read_cpu_us`] = round(cpuUs);
    result[`${route}_list_100_us`] = round(listUs);
    result[`${route}_self_test_ms`] = round(selfTestMs);
    console.log(
      `${route}: read ${round(wallUs)} us wall, ${round(cpuUs)} us CPU per read; listing ${AGENT_FILES} entries ${round(listUs)} us; self-test ${round(selfTestMs)} ms`,
    );
  }
  const chosen = checkDescriptorAccess({});
  result.chosen = chosen.available ? chosen.route.name : null;
  result.load_average_1m = round(os.loadavg()[0]!);
  console.log(`chosen at startup: ${String(result.chosen)}`);
  console.log(`BENCH_JSON ${JSON.stringify(result)}`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

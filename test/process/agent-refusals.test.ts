// "Would invoke_agent refuse this agent, and why" has one answer (src/supervisor/runs/agent-refusal.ts):
// for every agent of the suite's fixtures (the DSL corpus, the quick start) and of projects crafted to
// meet each refusal, list_agents, `symbi check --json` and invoke_agent itself, each through its real
// interface, give the same refusal in the same words, and the startup summary on stderr says it too. The servers run with no model provider, so an
// agent nothing refuses meets the session's own refusal (no provider) instead of running. The session runs in process
// (test/support/in-process-server.ts), except where a real process is the point (no /proc in a private mount namespace).
// `symbi check --json` runs as the command for the quick start and the project without /proc; for the other projects
// its report is built in process by the function the command prints (buildCheckReport), the same report.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import type { CheckReport } from '../../src/supervisor/commands/check-command.js';
import { AGENT_REFUSAL_KINDS } from '../../src/supervisor/runs/agent-refusal.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { makeProject, removeProject } from '../support/project.js';
import { builtModule, repoRoot, symbiBin } from '../support/server-entry.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { serverEnv, startServer, textOf, waitForStderr, type RunningServer } from '../support/server.js';

interface ListedAgent {
  stem: string;
  file: string;
  invocable: boolean;
  declared_name?: string;
  refusal?: string;
  reason?: string;
}

interface ListAgents {
  agents: ListedAgent[];
  left_out: { file: string; reason: string }[];
}

const CORPUS = path.join(repoRoot, 'test', 'fixtures', 'dsl');
const QUICKSTART = path.join(repoRoot, 'examples', 'quickstart');
const PERMIT_ALL = '@id("permit-respond")\npermit (principal, action == Action::"respond", resource);\n';

/** The files of `dir`, recursively, as makeProject takes them (paths relative to `dir`). */
function filesOf(dir: string, prefix = ''): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) Object.assign(files, filesOf(full, `${prefix}${entry.name}/`));
    else files[`${prefix}${entry.name}`] = fs.readFileSync(full, 'utf8');
  }
  return files;
}

/** Every source of the DSL corpus as an agent file. */
function corpusAgents(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of fs.readdirSync(CORPUS).filter((f) => /\.(symbi|dsl)$/.test(f))) files[`agents/${name}`] = fs.readFileSync(path.join(CORPUS, name), 'utf8');
  return files;
}

const PROJECTS: { name: string; files: () => Record<string, string>; links?: Record<string, string>; checkAsCommand?: true }[] = [
  { name: 'the quick start', files: () => filesOf(QUICKSTART), checkAsCommand: true },
  { name: 'the DSL corpus, default permission', files: corpusAgents },
  {
    name: 'the DSL corpus under a policy set that can never permit one agent',
    files: () => ({
      ...corpusAgents(),
      'agents/blocked.symbi': 'agent blocked {\n  capabilities = ["answer"]\n}\n',
      'policies/mcp-server/respond.cedar':
        PERMIT_ALL + '@id("never-blocked")\nforbid (principal, action == Action::"respond", resource) when { context.agent.name == "blocked" };\n',
    }),
  },
  {
    name: 'a policy set that fails validation (deny-all)',
    files: () => ({
      'agents/assistant.symbi': 'agent assistant {}\n',
      'agents/tool.symbi': 'agent tool(x: int) {}\n',
      'policies/mcp-server/respond.cedar': '@id("typo")\npermit (principal, action == Action::"respond", resource) when { context.no_such_field == 1 };\n',
    }),
  },
  {
    name: 'a shared stem, an alias and a file left out at startup',
    files: () => ({
      'agents/dup.symbi': 'agent dup {}\n',
      'agents/dup.dsl': 'agent dup {}\n',
      'agents/nickname.symbi': 'agent real_name {}\n',
      'agents/several.symbi': 'agent a {}\nagent b {}\n',
      'policies/mcp-server/respond.cedar': PERMIT_ALL,
    }),
    // Discovery leaves a symbolic link out: invoke_agent then does not know its stem.
    links: { 'agents/linked.symbi': 'nickname.symbi' },
  },
];

/** Every kind of refusal the projects above met, through all three routes. */
const met = new Set<string>();

async function checkReport(project: string, asCommand: boolean): Promise<CheckReport> {
  if (asCommand) {
    const run = spawnSync(process.execPath, [symbiBin, 'check', '--project', project, '--json'], { encoding: 'utf8', env: serverEnv(), timeout: 60_000 });
    assert.ok(run.stdout.startsWith('{'), `symbi check --json printed a report: ${run.stderr}`);
    return JSON.parse(run.stdout) as CheckReport;
  }
  // What runCheck prints with --json, built from dist/ as the in-process session is (its analysis thread runs dist/'s modules).
  const { buildCheckReport } = (await import(
    builtModule('supervisor/commands/check-command.js')
  )) as typeof import('../../src/supervisor/commands/check-command.js');
  const { pinProject } = (await import(builtModule('shared/confinement/index.js'))) as typeof import('../../src/shared/confinement/index.js');
  const env = serverEnv();
  return JSON.parse(JSON.stringify(await buildCheckReport(pinProject(project, env), { strict: false, online: false }, env))) as CheckReport;
}

async function invokeRefusal(server: Pick<RunningServer, 'call'>, agent: string): Promise<string> {
  const result = await server.call('invoke_agent', { agent, prompt: 'hello' });
  assert.equal(result.isError, true, `${agent}: refused`);
  assert.equal(result.structuredContent, undefined, `${agent}: refused before any journal`);
  return textOf(result);
}

for (const spec of PROJECTS) {
  describe(`one refusal for every agent: ${spec.name}`, () => {
    let project: string;
    let server: InProcessServer;
    let report: CheckReport;

    before(async () => {
      project = makeProject(spec.files());
      for (const [link, target] of Object.entries(spec.links ?? {})) fs.symlinkSync(target, path.join(project, link));
      report = await checkReport(project, spec.checkAsCommand === true);
      server = await startInProcessServer(project);
    });

    after(async () => {
      await server?.close();
      if (project) removeProject(project);
    });

    it('list_agents, symbi check and invoke_agent refuse each agent for the same reason, in the same words', async () => {
      const listed = (await server.call('list_agents')).structuredContent as unknown as ListAgents;
      assert.ok(listed.agents.length > 0, 'the project has agents');
      const checked = new Map(report.agents.list.map((a) => [a.file, a]));
      assert.deepEqual([...checked.keys()].sort(), listed.agents.map((a) => a.file).sort(), 'the same files');
      const invoked = new Map<string, string>();
      for (const agent of listed.agents) {
        const check = checked.get(agent.file)!;
        const what = `${agent.file}: list_agents ${JSON.stringify(agent)}, symbi check ${JSON.stringify(check)}`;
        assert.equal(check.invocable, agent.invocable, what);
        assert.equal(check.refusal, agent.refusal ?? null, what);
        assert.equal(check.reason, agent.reason ?? null, what);
        if (agent.invocable) assert.equal(check.declared_name, agent.declared_name, what);
        if (!invoked.has(agent.stem)) invoked.set(agent.stem, await invokeRefusal(server, agent.stem));
        const text = invoked.get(agent.stem)!;
        if (agent.invocable) {
          // Nothing about the agent refuses it: the session's refusal (no provider) is what stops it.
          assert.match(text, /^invoke_agent refused: no model provider is configured: /, what);
          met.add('runs');
        } else {
          assert.equal(text, `invoke_agent refused: ${agent.reason}`, what);
          met.add(agent.refusal!);
        }
      }
      // The startup summary on standard error says the same of each agent.
      const stderr = await waitForStderr(server, (text) => text.includes('serving MCP'));
      let summarised = 0;
      for (const agent of listed.agents) {
        const state = agent.invocable ? 'invocable' : `not invocable: ${agent.reason}`;
        // Words with characters the operator log escapes are left to its own tests.
        if (!/^[\x20-\x7e]*$/.test(state)) continue;
        assert.ok(stderr.includes(`(${agent.file}): ${state}\n`), `${agent.file}: the startup summary says ${state}`);
        summarised += 1;
      }
      assert.ok(summarised > 0, 'the startup summary was compared');
      // A file left out at startup has a stem invoke_agent does not know, unless another file shares it.
      const stems = new Set(listed.agents.map((a) => a.stem));
      for (const skipped of listed.left_out) {
        const stem = path.basename(skipped.file).replace(/\.(symbi|dsl)$/, '');
        if (stems.has(stem)) continue;
        assert.match(await invokeRefusal(server, stem), new RegExp(`^invoke_agent refused: unknown agent \`${stem}\`; invocable: `));
        assert.ok(
          report.agents.left_out.some((l) => l.file === skipped.file),
          `symbi check also leaves ${skipped.file} out`,
        );
        met.add('unknown_agent');
      }
    });
  });
}

// Without a confinement route no project file is read: check lists no agent and list_agents is refused,
// both for the reason invoke_agent gives any name. Made real as descriptor-access.test.ts does: the
// /proc route, forced, in a private mount namespace with an empty tmpfs over /proc.
const NO_PROC = ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"'];

describe('one refusal for every agent: no project access', { skip: namespaceSkip() }, () => {
  let project: string;
  let server: RunningServer;
  const env = { ...serverEnv(), SYMBI_CONFINEMENT_ROUTE: 'proc' };

  before(async () => {
    project = makeProject({ 'agents/assistant.symbi': 'agent assistant {}\n' });
    server = await startServer(project, { env, launcher: NO_PROC });
  });

  after(async () => {
    await server?.close();
    if (project) removeProject(project);
  });

  it('symbi check, list_agents and invoke_agent give the same reason', async () => {
    const [command, ...args] = [...NO_PROC, process.execPath, symbiBin, 'check', '--project', project, '--json'];
    const run = spawnSync(command, args, { encoding: 'utf8', env, timeout: 60_000 });
    const report = JSON.parse(run.stdout) as CheckReport;
    assert.equal(report.confinement.available, false);
    assert.deepEqual(report.agents.list, [], 'no agent file was read');
    const words = `project files are unavailable: ${report.confinement.reason}`;
    assert.equal(textOf(await server.call('list_agents')), `list_agents: ${words}`);
    assert.equal(await invokeRefusal(server, 'assistant'), `invoke_agent refused: ${words}`);
    met.add('project_unavailable');
  });
});

// A stem two files share is ambiguous; when the startup analysis leaves one of them out (too complex
// for its budget), invoke_agent's registry holds the other alone, and list_agents must say it runs.
// Through the built modules and a real analysis thread with a 50 ms budget, as dsl-hostile-server.test.ts.
describe('a stem shared with a file the startup analysis leaves out', { timeout: 120_000 }, () => {
  let project: string;
  after(() => {
    if (project) removeProject(project);
  });

  it('is what invoke_agent selects, and list_agents and symbi check say so', async () => {
    const built = async <T>(module: string): Promise<T> => (await import(builtModule(module))) as T;
    const { pinProject } = await built<typeof import('../../src/shared/confinement/index.js')>('shared/confinement/index.js');
    const { closeAuditStorage } = await built<typeof import('../../src/shared/storage/audit-storage.js')>('shared/storage/audit-storage.js');
    const { takeStartupSnapshot } = await built<typeof import('../../src/supervisor/startup/startup-snapshot.js')>('supervisor/startup/startup-snapshot.js');
    const { analyseSources } = await built<typeof import('../../src/supervisor/startup/source-analysis.js')>('supervisor/startup/source-analysis.js');
    const { DslAnalysisPool } = await built<typeof import('../../src/supervisor/threads/dsl-analysis-pool.js')>('supervisor/threads/dsl-analysis-pool.js');
    const { createOperatorLog } = await built<typeof import('../../src/supervisor/operator/operator-log.js')>('supervisor/operator/operator-log.js');
    const refusals = await built<typeof import('../../src/supervisor/runs/agent-refusal.js')>('supervisor/runs/agent-refusal.js');
    const { agentPreflight } = await built<typeof import('../../src/supervisor/runs/invoke-preflight.js')>('supervisor/runs/invoke-preflight.js');

    project = makeProject({ 'agents/dup.symbi': 'agent dup {}\n', 'agents/dup.dsl': `agent dup { capabilities = [a${'.b'.repeat(500_000)}] }\n` });
    const { snapshot, auditStorage } = takeStartupSnapshot(pinProject(project, serverEnv()));
    const pool = new DslAnalysisPool({ log: createOperatorLog('text'), budgetMs: 50 });
    try {
      const analysis = await analyseSources(snapshot, pool);
      assert.deepEqual(
        analysis.skipped.map((s) => s.file),
        ['agents/dup.dsl'],
      );
      assert.match(analysis.skipped[0]!.reason, /too complex to analyse/);
      const inputs = { projectAccess: snapshot.projectAccess, policySet: snapshot.policy.set };
      const standings = await refusals.agentStandings(inputs, analysis.agents);
      assert.deepEqual(
        standings.map((s) => [s.summary.file, s.refusal === undefined ? 'runs' : refusals.refusalText(s.refusal)]),
        [['agents/dup.symbi', 'runs']],
      );
      const selected = agentPreflight('dup', { ...inputs, registry: analysis.registry });
      assert.ok(selected.ok && selected.definition.file === 'agents/dup.symbi', JSON.stringify(selected));
    } finally {
      await pool.close();
      if (auditStorage !== null) closeAuditStorage(auditStorage);
    }
  });
});

test('docs/check.schema.json names the kinds list_agents advertises', () => {
  const schema = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs', 'check.schema.json'), 'utf8')) as {
    properties: { agents: { properties: { list: { items: { properties: { refusal: { enum: (string | null)[] } } } } } } };
  };
  const kinds = schema.properties.agents.properties.list.items.properties.refusal.enum.filter((k) => k !== null);
  assert.deepEqual(kinds, [...AGENT_REFUSAL_KINDS]);
});

test('the projects above meet every refusal list_agents and symbi check can show, and an agent that runs', () => {
  // From the declaration, so a refusal kind added there fails here until a project above meets it.
  const expected = ['runs', ...AGENT_REFUSAL_KINDS.filter((kind) => kind !== 'project_unavailable' || namespaceSkip() === undefined)];
  assert.deepEqual([...met].sort(), expected.sort());
});

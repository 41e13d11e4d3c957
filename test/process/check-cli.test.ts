// `symbi check` through the real CLI on real projects: its verdicts are the
// server's own (compared with what `symbi mcp` says and does on the same
// project), its JSON validates against docs/check.schema.json, and it never
// prints a key or a model's answer. A project's report is built by the
// function `symbi check` runs (buildCheckReport, printed by formatCheckReport or
// as JSON), in this process, and the server it is compared with is the session
// `symbi mcp` serves, in this process too (test/support/in-process-server.ts);
// the command runs as a process where the command line is the point: the text
// and JSON reports as printed with their exit status, --strict and --online as
// parsed, usage errors, and another user's process.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { CheckReport } from '../../src/supervisor/commands/check-command.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { makeProject, removeProject, tempDir } from '../support/project.js';
import { builtModule, repoRoot, symbiBin } from '../support/server-entry.js';
import { providerEnv, serverEnv, startServer, textOf, waitForStderr } from '../support/server.js';
import { DEFAULT_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { kindEnv, testModel } from '../support/provider-env.js';

// The check's code from dist/, as the in-process session loads it: its DSL analysis thread starts dist/'s modules.
const { buildCheckReport, formatCheckReport } = (await import(
  builtModule('supervisor/commands/check-command.js')
)) as typeof import('../../src/supervisor/commands/check-command.js');
const { pinProject } = (await import(builtModule('shared/confinement/index.js'))) as typeof import('../../src/shared/confinement/index.js');

const TEST_KEY = 'sk-test-not-a-real-key';
const schema = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs', 'check.schema.json'), 'utf8')) as object;
const ajv = new Ajv2020({ allErrors: true, strict: true });
const validateReport = ajv.compile(schema);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function symbi(args: string[], env: Record<string, string>, launcher: string[] = []): Run {
  const [command, ...rest] = [...launcher, process.execPath, symbiBin, ...args];
  const r = spawnSync(command!, rest, { encoding: 'utf8', env, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

type Report = CheckReport;

/** Like symbi(), without blocking this process: the synthetic endpoint it talks to runs here. */
function symbiAsync(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [symbiBin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The parsed report, validated against the published schema and checked against the exit status. */
function parseReport(run: Run): Report {
  const report = JSON.parse(run.stdout) as Report;
  assert.ok(validateReport(report), `the report validates against docs/check.schema.json: ${ajv.errorsText(validateReport.errors)}`);
  assert.equal(run.code, report.exit_code, 'the exit status is the one the report gives');
  return report;
}

/** `symbi check --json`: the report, validated against the published schema, with the exit status it claims. */
function checkJson(project: string, env: Record<string, string>, extra: string[] = [], launcher: string[] = []): { run: Run; report: Report } {
  const run = symbi(['check', '--project', project, '--json', ...extra], env, launcher);
  return { run, report: parseReport(run) };
}

/** What `symbi check --project DIR --json` prints and exits with, from the report it prints (buildCheckReport), built in this process with `env` as its environment. */
async function checkJsonInProcess(
  project: string,
  env: Record<string, string>,
  options: { strict?: boolean; online?: boolean } = {},
): Promise<{ run: Run; report: Report }> {
  const report = await buildCheckReport(pinProject(project, env), { strict: options.strict === true, online: options.online === true }, env);
  const run = { code: report.exit_code, stdout: `${JSON.stringify(report, null, 2)}\n`, stderr: '' };
  return { run, report: parseReport(run) };
}

function copyQuickstart(): string {
  const dir = path.join(tempDir('symbi-check-'), 'quickstart');
  fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), dir, { recursive: true });
  return dir;
}

/** Every path under `dir`, relative, sorted. */
function tree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort();
}

describe('symbi check', () => {
  let endpoint: SyntheticEndpoint;
  const projects: string[] = [];
  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
    for (const dir of projects) removeProject(path.dirname(dir));
  });
  const project = (): string => {
    const dir = copyQuickstart();
    projects.push(dir);
    return dir;
  };

  test('the quick start: every section, exit 0, the refused agent with the reason invoke_agent gives, never the key', async () => {
    const dir = project();
    const env = providerEnv(endpoint.url);
    const text = symbi(['check', '--project', dir], env);
    assert.equal(text.code, 0, text.stdout + text.stderr);
    for (const heading of ['confinement', 'agents', 'policy', 'AGENTS.md', 'storage', 'provider']) assert.match(text.stdout, new RegExp(`^${heading}$`, 'm'));
    assert.match(text.stdout, /^ {2}ok {4}assistant \(agents\/assistant\.symbi\): invocable, runs as assistant$/m);
    assert.match(text.stdout, /^ {2}warn {2}pipeline \(agents\/pipeline\.symbi\): refused: /m);
    assert.match(text.stdout, /^result: symbi mcp would start and serve as configured; 0 failures, 1 finding$/m);
    assert.ok(!text.stdout.includes(TEST_KEY) && !text.stderr.includes(TEST_KEY), 'the key is never printed');
    assert.match(text.stdout, /key set in OPENAI_API_KEY/);

    const { report } = await checkJsonInProcess(dir, env);
    assert.equal(report.serves, true);
    assert.equal(report.policy.mode, 'configured');
    assert.deepEqual(
      report.policy.policies.map((p) => p.line),
      [2, 7],
    );
    const pipeline = report.agents.list.find((a) => a.stem === 'pipeline')!;
    assert.equal(pipeline.invocable, false);

    // The server refuses the same agent with the same words.
    const server = await startInProcessServer(dir, { env });
    try {
      const result = await server.call('invoke_agent', { agent: 'pipeline', prompt: 'hello' });
      assert.equal(result.isError, true);
      assert.equal(textOf(result), `invoke_agent refused: ${pipeline.reason}`);
      const stderr = await waitForStderr(server, (t) => t.includes('audit public key'));
      assert.ok(stderr.includes(report.storage.signing_key!.public_key), 'the server announces the key the check reported');
    } finally {
      await server.close();
    }
  });

  test('--strict fails on a finding (the refused agent); without it the same project passes', async () => {
    const dir = project();
    const env = providerEnv(endpoint.url);
    const { run, report } = await checkJsonInProcess(dir, env, { strict: true });
    assert.equal(run.code, 1);
    assert.equal(report.serves, true, 'the server would still serve');
    assert.match(symbi(['check', '--project', dir, '--strict'], env).stdout, /\(--strict: a finding fails the check\)$/m);
  });

  test('it creates exactly what symbi mcp creates at startup, and reports the key it created once', async () => {
    const checked = project();
    const served = project();
    const env = providerEnv(endpoint.url);
    // The first check as a process (what the command creates), the second in this process.
    const first = checkJson(checked, env).report;
    assert.equal(first.storage.signing_key!.created, true);
    assert.equal(first.storage.signing_key!.mode, '0600');
    const second = (await checkJsonInProcess(checked, env)).report;
    assert.equal(second.storage.signing_key!.created, false, 'the second check finds the key');
    assert.equal(second.storage.signing_key!.public_key, first.storage.signing_key!.public_key);

    const server = await startInProcessServer(served, { env });
    await waitForStderr(server, (t) => t.includes('serving MCP'));
    await server.close();
    assert.deepEqual(tree(checked), tree(served), 'the check leaves the same files as a server start');
  });

  test('--online: one real request, its finish reason, never its text', async () => {
    const dir = project();
    const sent = endpoint.requests.length;
    const run = await symbiAsync(['check', '--project', dir, '--json', '--online'], providerEnv(endpoint.url));
    const report = parseReport(run);
    assert.equal(run.code, 0, run.stdout);
    assert.equal(endpoint.requests.length - sent, 1, 'exactly one request');
    assert.deepEqual(report.provider.online, { ok: true, status: null, finish_reason: 'complete', provider_finish_reason: 'stop', error: null });
    assert.ok(!run.stdout.includes(DEFAULT_ANSWER), 'the answer is not printed');
  });

  test('--online with Google Gemini: one generateContent request with the key in its header, its finish reason, never its text', async () => {
    const dir = project();
    const sent = endpoint.requests.length;
    const key = 'AIzaSyFAKE-gemini-check-key-0123456789a';
    const { run, report } = await checkJsonInProcess(dir, kindEnv('gemini', endpoint.origin, key), { online: true });
    assert.equal(run.code, 0, run.stdout);
    assert.equal(endpoint.requests.length - sent, 1, 'exactly one request');
    const request = endpoint.requests.at(-1)!;
    assert.equal(request.target, `/v1beta/models/${testModel('gemini')}:generateContent`);
    assert.equal(request.headers['x-goog-api-key'], key);
    assert.equal(report.provider.kind, 'gemini');
    assert.deepEqual(report.provider.online, { ok: true, status: null, finish_reason: 'complete', provider_finish_reason: 'STOP', error: null });
    assert.ok(!run.stdout.includes(DEFAULT_ANSWER) && !run.stdout.includes(key), 'neither the answer nor the key is printed');
  });

  test('--online against a failing provider: FAIL with the status, exit 1', async () => {
    const failing = await startSyntheticEndpoint({ defaultMode: 'http500' });
    try {
      const dir = project();
      const { run, report } = await checkJsonInProcess(dir, providerEnv(failing.url), { online: true });
      assert.equal(run.code, 1);
      assert.equal(report.provider.online!.ok, false);
      assert.equal(report.provider.online!.status, 500);
      assert.ok(!run.stdout.includes('synthetic internal server error'), "the provider's words are not printed");
    } finally {
      await failing.close();
    }
  });

  test('a deny-all policy set: FAIL naming the file, every agent refused as invoke_agent refuses it, exit 1', async () => {
    const dir = project();
    fs.writeFileSync(
      path.join(dir, 'policies', 'mcp-server', 'respond.cedar'),
      'permit (principal, action, resource) when { context.response.content.contains("x") };\n',
    );
    const { run, report } = await checkJsonInProcess(dir, providerEnv(endpoint.url));
    assert.equal(run.code, 1);
    assert.equal(report.serves, false);
    assert.equal(report.policy.mode, 'deny-all');
    assert.match(report.policy.deny_reason ?? '', /fails validation against the respond schema/);
    for (const agent of report.agents.list.filter((a) => a.stem !== 'pipeline')) {
      assert.match(agent.reason ?? '', /^Cedar policy denies every response from agent `\w+`: deny-all policy set: /);
    }
    // The text `symbi check` prints for this report.
    const text = { stdout: formatCheckReport(report) };
    assert.match(text.stdout, /^ {2}FAIL {2}the policy set denies every response: /m);
    assert.match(text.stdout, /^result: symbi mcp would not serve as configured; /m);
  });

  test('a missing provider key: FAIL naming the variable, exit 1', async () => {
    const dir = project();
    const env = { ...serverEnv(), SYMBI_PROVIDER: 'anthropic' };
    const { run, report } = await checkJsonInProcess(dir, env);
    assert.equal(run.code, 1);
    assert.equal(report.provider.configured, false);
    assert.equal(report.provider.problem, 'SYMBI_PROVIDER=anthropic but ANTHROPIC_API_KEY is not set');
    const none = (await checkJsonInProcess(dir, serverEnv())).report;
    assert.match(none.provider.problem ?? '', /^no model provider is configured/);
  });

  test('an unsafe signing key: FAIL in storage, exit 1', async () => {
    const dir = project();
    const env = providerEnv(endpoint.url);
    await checkJsonInProcess(dir, env);
    fs.chmodSync(path.join(dir, '.symbiont', 'governed', 'audit-signing.key'), 0o644);
    const { run, report } = await checkJsonInProcess(dir, env);
    assert.equal(run.code, 1);
    assert.equal(report.storage.audit.ready, false);
    assert.match(report.storage.audit.reason ?? '', /unsafe signing key: mode 0644 grants group or other access; expected 0600/);
    assert.equal(report.storage.signing_key, null);
  });

  test('no confinement route: FAIL with the reason, and nothing else read', async () => {
    const dir = project();
    const { run, report } = await checkJsonInProcess(dir, { ...providerEnv(endpoint.url), SYMBI_CONFINEMENT_ROUTE: 'nonesuch' });
    assert.equal(run.code, 1);
    assert.equal(report.confinement.available, false);
    assert.match(report.confinement.reason ?? '', /SYMBI_CONFINEMENT_ROUTE="nonesuch" is not a route/);
    assert.equal(report.agents.list.length, 0);
    assert.equal(report.policy.mode, 'deny-all');
    assert.ok(!fs.existsSync(path.join(dir, '.symbiont')), 'no storage was created');
  });

  test('left-out files, ambiguous stems and AGENTS.md without a section are reported', async () => {
    const dir = makeProject({
      'agents/twin.symbi': 'agent twin {}\n',
      'agents/twin.dsl': 'agent twin {}\n',
      'agents/.hidden.symbi': 'agent hidden {}\n',
      'AGENTS.md': '# notes only\n',
    });
    projects.push(path.join(dir, 'x'));
    const { report } = await checkJsonInProcess(dir, providerEnv(endpoint.url));
    assert.deepEqual(report.agents.ambiguous_stems, [{ stem: 'twin', files: ['agents/twin.dsl', 'agents/twin.symbi'] }]);
    assert.deepEqual(report.agents.left_out, [{ file: 'agents/.hidden.symbi', reason: 'hidden file names are not read' }]);
    assert.equal(report.agents_md.guidance, null);
    assert.equal(report.policy.mode, 'default-permit');
    assert.ok(report.lines.some((l) => l.severity === 'info' && /default permission/.test(l.text)));
  });

  test('usage errors exit 2 with one line', () => {
    const bogus = symbi(['check', '--bogus'], serverEnv());
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /unknown option '--bogus'/);
    const missing = symbi(['check', '--project', path.join(os.tmpdir(), `symbi-no-such-${randomBytes(4).toString('hex')}`)], serverEnv());
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^symbi check: --project .*: no such directory\n$/);
    assert.equal(missing.stdout, '');
  });
});

const notRoot = process.getuid?.() !== 0 ? 'skipped: running the check as another user needs root' : false;
const tools = (() => {
  if (notRoot) return notRoot;
  for (const tool of ['useradd', 'userdel', 'setpriv', 'runuser']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `skipped: ${tool} is not installed`;
    }
  }
  return false;
})();

describe('symbi check under a 0711 ancestor, as another user', { skip: tools }, () => {
  const user = `symk${randomBytes(3).toString('hex')}`;
  let base = '';
  let unreachable: string | false = false;
  before(() => {
    execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', user]);
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-check-0711-'));
    const probe = spawnSync('runuser', ['-u', user, '--', process.execPath, symbiBin, '--version'], { encoding: 'utf8' });
    if (probe.status !== 0) unreachable = `skipped: another user cannot run ${symbiBin}`;
  });
  after(() => {
    fs.rmSync(base, { recursive: true, force: true });
    execFileSync('userdel', [user], { stdio: 'ignore' });
  });

  test("the check's ownership and policy verdicts are the server's", async (t) => {
    if (unreachable) return t.skip(unreachable);
    // A shared tree its users may search but not list, such as /srv often is.
    const shared = path.join(base, 'srv');
    fs.mkdirSync(shared);
    fs.chmodSync(base, 0o755);
    fs.chmodSync(shared, 0o711);
    const dir = path.join(shared, 'project');
    fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), dir, { recursive: true });
    execFileSync('chown', ['-R', `${user}:${user}`, dir]);
    const launcher = ['setpriv', '--reuid', user, '--regid', user, '--init-groups'];
    const env = { ...providerEnv('http://127.0.0.1:9/v1'), HOME: base };
    const { report } = checkJson(dir, env, [], launcher);

    const server = await startServer(dir, { env, launcher });
    let stderr: string;
    try {
      stderr = await waitForStderr(server, (s) => s.includes('serving MCP'));
    } finally {
      await server.close();
    }
    assert.equal(report.storage.ownership.checked, true);
    if (report.storage.ownership.problem === null) {
      assert.doesNotMatch(stderr, /policy set denies every response/, 'the server trusts the directories too');
      assert.equal(report.policy.mode, 'configured');
    } else {
      assert.ok(stderr.includes(report.storage.ownership.problem), `the server names the same problem: ${report.storage.ownership.problem}`);
      assert.equal(report.policy.mode, 'deny-all');
      assert.equal(report.exit_code, 1);
    }
    assert.equal(report.policy.mode === 'deny-all', /policy set denies every response/.test(stderr));
  });
});

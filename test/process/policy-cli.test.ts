// `symbi policy test` and `symbi policy validate`: the shipped cases pass, a
// decision is the one the server makes on the same answer (compared with a real
// invoke_agent served in process), a mismatch and a malformed case file are reported on one line
// each, and no answer text is ever printed. Each input's outcome is checked by
// calling the commands' run functions (runPolicyTest, runPolicyValidate) in this
// process (test/support/cli-in-process.ts); a `symbi` process is kept for what
// only a process shows: the options as the command line passes them, the exit
// status of a usage error, and the environment a refused path would have read.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PolicyTestOptions } from '../../src/supervisor/commands/policy-command.js';
import { runCommandInProcess } from '../support/cli-in-process.js';
import { removeProject, tempDir } from '../support/project.js';
import { builtModule, repoRoot, symbiBin } from '../support/server-entry.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { providerEnv, serverEnv, textOf, waitForStderr } from '../support/server.js';
import { SECRET_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';

// The commands' code from dist/, as the in-process session loads it: the check's DSL analysis thread starts dist/'s modules.
const { runPolicyTest, runPolicyValidate } = (await import(
  builtModule('supervisor/commands/policy-command.js')
)) as typeof import('../../src/supervisor/commands/policy-command.js');
const { buildCheckReport } = (await import(
  builtModule('supervisor/commands/check-command.js')
)) as typeof import('../../src/supervisor/commands/check-command.js');
const { pinProject } = (await import(builtModule('shared/confinement/index.js'))) as typeof import('../../src/shared/confinement/index.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function symbi(args: string[], cwd = repoRoot): Run {
  const r = spawnSync(process.execPath, [symbiBin, ...args], { encoding: 'utf8', env: serverEnv(), cwd, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `symbi policy test --project DIR [FILES...]` with the options given, run in this process. */
function policyTest(project: string, files: string[] = [], options: Omit<PolicyTestOptions, 'project' | 'files'> = {}): Run {
  return runCommandInProcess(() => runPolicyTest({ project, files, ...options }));
}

/** `symbi policy validate --project DIR`, run in this process. */
function policyValidate(project: string): Run {
  return runCommandInProcess(() => runPolicyValidate({ project, files: [] }));
}

const work = tempDir('symbi-policy-cli-');
after(() => removeProject(work));
let copies = 0;

function copyQuickstart(): string {
  const dir = path.join(work, `quickstart-${copies++}`);
  fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), dir, { recursive: true });
  return dir;
}

function writeCases(dir: string, name: string, body: unknown): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
}

test("the example policies' cases pass against the quick start's agents, copied into the project as docs/cedar-policies.md says", () => {
  const files = fs.readdirSync(path.join(repoRoot, 'policies', 'tests')).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 3);
  // The paths in a case file name files of the project, so the examples and their cases go into it.
  const dir = copyQuickstart();
  for (const folder of ['examples', 'tests']) fs.cpSync(path.join(repoRoot, 'policies', folder), path.join(dir, 'policies', folder), { recursive: true });
  const r = policyTest(dir);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  for (const file of files) assert.match(r.stdout, new RegExp(`^policies/tests/${file.replace('.', '\\.')} \\(`, 'm'), file);
  assert.match(r.stdout, /^\d+ cases: (\d+) passed, 0 failed$/m);
  assert.doesNotMatch(r.stdout, /FAIL/);
  assert.match(r.stdout, /permitted by restrict-by-capability$/m);
});

test("the quick start's own cases pass from policies/tests/ by default, naming each determining policy by @id and file:line", () => {
  const dir = copyQuickstart();
  const r = policyTest(dir);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^policies\/tests\/respond\.json \(the project policy set\):$/m);
  assert.match(r.stdout, /^ {2}pass {2}"an answer that mentions a secret is withheld": deny, as expected: forbidden by forbid-secret-content$/m);
  assert.match(r.stdout, /^5 cases: 5 passed, 0 failed$/m);
  assert.ok(!fs.existsSync(path.join(dir, '.symbiont')), 'nothing is written to the project');
});

describe('decisions are the server’s', () => {
  let endpoint: SyntheticEndpoint;
  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
  });

  test('the answer the server withholds is denied by the same policy, named by its @id on every surface', async () => {
    const dir = copyQuickstart();
    // The session `symbi mcp` serves, in this process (its operator log's lines kept in memory).
    const server = await startInProcessServer(dir, { env: providerEnv(endpoint.url) });
    let refusal: string;
    let stderr: string;
    try {
      // The synthetic endpoint answers SECRET_ANSWER for a prompt asking for the secret.
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: '[[secret]] tell me the secret' });
      assert.equal(result.isError, true);
      refusal = textOf(result);
      stderr = await waitForStderr(server, (text) => /policy\.denied/.test(text) && /run\.ended/.test(text));
    } finally {
      await server.close();
    }
    // The client, the policy.denied event and the run.ended line name the policy as policy test does.
    assert.match(refusal, /Cedar policy denied the response: forbidden by forbid-secret-content\b/m);
    const denied = stderr.split('\n').find((line) => line.includes('policy.denied'));
    assert.ok(denied !== undefined, stderr);
    assert.match(denied, /forbid-secret-content/);
    assert.doesNotMatch(denied, /respond\.cedar/);
    const cases = writeCases(work, `server-${copies}.json`, {
      cases: [{ name: 'the secret', agent: 'assistant', response: SECRET_ANSWER, provider_finish_reason: 'stop', expect: 'deny' }],
    });
    const r = policyTest(dir, [cases]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /: forbidden by forbid-secret-content$/m);
    assert.ok(!r.stdout.includes(SECRET_ANSWER), 'the answer text is not printed');
  });
});

test('a mismatch fails with exit 1, and says what was decided and expected', () => {
  const dir = copyQuickstart();
  const cases = writeCases(work, 'mismatch.json', {
    cases: [
      { name: 'wrong expectation', agent: 'assistant', response: 'the secret is out', expect: 'allow' },
      { name: 'wrong determining', agent: 'assistant', response: 'fine', expect: 'allow', determining: ['forbid-secret-content'] },
      { name: 'unknown agent', agent: 'nobody', response: 'x', expect: 'allow' },
    ],
  });
  const r = policyTest(dir, [cases]);
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /^ {2}FAIL {2}"wrong expectation": deny, expected allow: forbidden by forbid-secret-content$/m);
  assert.match(
    r.stdout,
    /^ {2}FAIL {2}"wrong determining": allow, as expected: permitted by permit-respond\n {8}expected determining policies: forbid-secret-content$/m,
  );
  assert.match(r.stdout, /^ {2}FAIL {2}"unknown agent": agent "nobody" cannot be invoked: unknown agent `nobody`$/m);
  assert.match(r.stdout, /^3 cases: 0 passed, 3 failed$/m);
  assert.doesNotMatch(r.stdout, /the secret is out/);
});

test('a malformed case file: one line naming the file, the case and the field, exit 2', () => {
  const bad: [string, unknown, RegExp][] = [
    [
      'expect.json',
      { cases: [{ agent: 'assistant', response: 'x', expect: 'maybe' }] },
      /^symbi policy test: \S*expect\.json: case 1: field "expect" must be "allow" or "deny"\n$/,
    ],
    [
      'named.json',
      {
        cases: [
          { name: 'ok', agent: 'assistant', response: 'x', expect: 'allow' },
          { name: 'two', agent: 'assistant', expect: 'deny' },
        ],
      },
      /named\.json: case 2 \("two"\): give exactly one of "response" .* and "response_file"/,
    ],
    [
      'extra.json',
      { cases: [{ agent: 'assistant', response: 'x', expect: 'deny', decision: 'deny' }] },
      /extra\.json: case 1: unknown field "decision"; allowed: /,
    ],
    [
      'finish.json',
      { cases: [{ agent: 'assistant', response: 'x', expect: 'deny', finish_reason: 'stop' }] },
      /finish\.json: case 1: field "finish_reason" must be one of complete, truncated, /,
    ],
    [
      'file.json',
      { cases: [{ agent: 'assistant', response_file: 'missing.txt', expect: 'deny' }] },
      /file\.json: case 1: field "response_file" names missing\.txt, which cannot be read: missing\.txt: no such file in the project$/m,
    ],
    ['top.json', [], /top\.json: expected a JSON object \{"cases": \[\.\.\.\]\}/],
    ['json.json', '{"cases": [', /json\.json: not valid JSON/],
  ];
  const dir = copyQuickstart();
  for (const [index, [name, body, expected]] of bad.entries()) {
    // The first as a process (the usage status and the line as a process writes it), the rest in this process.
    const file = writeCases(work, path.join('bad', name), body);
    const r = index === 0 ? symbi(['policy', 'test', '--project', dir, file]) : policyTest(dir, [file]);
    assert.equal(r.code, 2, `${name}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected, name);
    assert.equal(r.stderr.split('\n').length, 2, `${name}: one line`);
    assert.equal(r.stdout, '', `${name}: no case ran`);
  }
});

// A case file may come from anywhere (a pull request's, in the CI step the README recommends), and
// Cedar's determining policies are printed: a path in it that reached outside the project could read
// the environment or the signing key out through the decisions. Each such path is refused, with one
// line naming the case, the field and what is allowed, before any case runs and with nothing read.
describe('the paths in a case file name files of the project only', () => {
  const KEY = 'sk-policy-case-key-never-shown-0123456789';
  const refusedPaths = [
    '/proc/self/environ',
    '../../../../etc/passwd',
    'policies/tests/../../../outside.txt',
    '.symbiont/governed/audit-signing.key',
    'agents/.env',
    'policies\\tests\\a.txt',
  ];

  // A process, with the key in its environment, where a path followed would have read that
  // environment (/proc/self/environ, directly or through a symlink); the same refusal of the other
  // paths runs in this process.
  const run = (dir: string, cases: string, asProcess: boolean): Run => {
    if (!asProcess) return policyTest(dir, [cases]);
    const r = spawnSync(process.execPath, [symbiBin, 'policy', 'test', '--project', dir, cases], {
      encoding: 'utf8',
      env: { ...serverEnv(), OPENAI_API_KEY: KEY },
      cwd: repoRoot,
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const assertRefused = (r: Run, field: string, expected: RegExp, what: string): void => {
    assert.equal(r.code, 2, `${what}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected, what);
    assert.equal(r.stderr.split('\n').length, 2, `${what}: one line: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`field "${field}" `), what);
    assert.equal(r.stdout, '', `${what}: no case ran`);
    assert.ok(!r.stderr.includes(KEY) && !r.stdout.includes(KEY), `${what}: the key is never shown`);
  };

  for (const refused of refusedPaths) {
    test(`response_file ${JSON.stringify(refused)}: refused, naming the case, the field and what is allowed`, () => {
      const dir = copyQuickstart();
      const cases = writeCases(dir, 'policies/tests/escape.json', { cases: [{ name: 'escape', agent: 'assistant', response_file: refused, expect: 'deny' }] });
      const r = run(dir, cases, refused === '/proc/self/environ');
      assertRefused(
        r,
        'response_file',
        /escape\.json: case 1 \("escape"\): field "response_file" names ".*", which is refused \(.+\); allowed: a path relative to the project folder/,
        refused,
      );
    });

    test(`policies ${JSON.stringify(refused)}: refused, naming the field and what is allowed`, () => {
      const dir = copyQuickstart();
      const cases = writeCases(dir, 'policies/tests/escape.json', { policies: [refused], cases: [{ agent: 'assistant', response: 'x', expect: 'deny' }] });
      assertRefused(
        run(dir, cases, refused === '/proc/self/environ'),
        'policies',
        /escape\.json: field "policies" names ".*", which is refused \(.+\); allowed: a path relative to the project folder/,
        refused,
      );
    });
  }

  test('the default cases in policies/tests/ are held to the same rules', () => {
    const dir = copyQuickstart();
    writeCases(dir, 'policies/tests/zz-escape.json', { cases: [{ name: 'environ', agent: 'assistant', response_file: '/proc/self/environ', expect: 'deny' }] });
    const r = spawnSync(process.execPath, [symbiBin, 'policy', 'test', '--project', dir], {
      encoding: 'utf8',
      env: { ...serverEnv(), OPENAI_API_KEY: KEY },
      timeout: 60_000,
    });
    assertRefused(
      { code: r.status, stdout: r.stdout, stderr: r.stderr },
      'response_file',
      /^symbi policy test: policies\/tests\/zz-escape\.json: case 1 \("environ"\): field "response_file" names "\/proc\/self\/environ", which is refused \(absolute paths are not allowed\)/,
      'default cases',
    );
  });

  test('a symlink in the project to a file outside it is not followed', () => {
    const dir = copyQuickstart();
    fs.mkdirSync(path.join(dir, 'policies', 'tests', 'answers'), { recursive: true });
    fs.symlinkSync('/proc/self/environ', path.join(dir, 'policies', 'tests', 'answers', 'env.txt'));
    const cases = writeCases(dir, 'policies/tests/link.json', {
      cases: [{ agent: 'assistant', response_file: 'policies/tests/answers/env.txt', expect: 'deny' }],
    });
    assertRefused(
      run(dir, cases, true),
      'response_file',
      /link\.json: case 1: field "response_file" names policies\/tests\/answers\/env\.txt, which cannot be read: .*symlink/,
      'symlink',
    );
  });

  test('a response_file and policies inside the project are read, relative to the project folder', () => {
    const dir = copyQuickstart();
    fs.mkdirSync(path.join(dir, 'policies', 'tests', 'answers'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'policies', 'tests', 'answers', 'secret.txt'), 'Here is the secret.');
    const cases = writeCases(dir, 'policies/tests/inside.json', {
      policies: ['policies/mcp-server/respond.cedar'],
      cases: [
        { name: 'from a file', agent: 'assistant', response_file: 'policies/tests/answers/secret.txt', expect: 'deny', determining: ['forbid-secret-content'] },
      ],
    });
    const r = run(dir, cases, false);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /inside\.json \(policies\/mcp-server\/respond\.cedar\):/);
    assert.match(r.stdout, /^ {2}pass {2}"from a file": deny, as expected: forbidden by forbid-secret-content/m);
  });
});

test('no policies/tests/ and no files named: a usage error naming the folder', () => {
  const dir = copyQuickstart();
  fs.rmSync(path.join(dir, 'policies', 'tests'), { recursive: true });
  const r = policyTest(dir);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^symbi policy test: policies\/tests\/ does not exist in .*; write cases there \(docs\/cedar-policies\.md\) or name case files\n$/);
});

test('validate: the project set loads, or each problem is a file:line:column line and the exit status is 1', () => {
  const dir = copyQuickstart();
  const good = policyValidate(dir);
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.match(good.stdout, /^policies\/mcp-server\/respond\.cedar: loaded 2 policies\nresult: 2 policies validate against the respond schema\n$/);

  const file = path.join(dir, 'policies', 'mcp-server', 'respond.cedar');
  fs.writeFileSync(file, '// a type error\n@id("bad")\npermit (principal, action, resource)\nwhen { context.response.content.contains("x") };\n');
  const typeError = policyValidate(dir);
  assert.equal(typeError.code, 1);
  assert.match(typeError.stdout, /^policies\/mcp-server\/respond\.cedar:4:\d+: error: bad: /m);
  assert.match(typeError.stdout, /^result: the policy set denies every response: /m);

  fs.writeFileSync(file, 'permit (principal, action, resource)\nwhen { context.surface == };\n');
  const syntax = policyValidate(dir);
  assert.equal(syntax.code, 1);
  assert.match(syntax.stdout, /^policies\/mcp-server\/respond\.cedar:2:\d+: error: not valid Cedar: /m);

  // As a process: a file named on the command line, relative to the folder the command runs in.
  const named = symbi(['policy', 'validate', path.join('policies', 'examples', 'forbid-secret-content.cedar')]);
  assert.equal(named.code, 0, named.stdout);
  assert.match(named.stdout, /^policies\/examples\/forbid-secret-content\.cedar: loaded 1 policy$/m);
});

test('a policy from a JSON policy file is named by its entry, since its lines are those of the entry', () => {
  const dir = copyQuickstart();
  fs.rmSync(path.join(dir, 'policies', 'mcp-server', 'respond.cedar'));
  fs.writeFileSync(
    path.join(dir, 'policies', 'mcp-server', 'set.cedar'),
    JSON.stringify([{ name: 'allow', source: '@id("permit-all")\npermit (principal, action == Action::"respond", resource);', active: true }]),
  );
  const cases = writeCases(work, 'json-form.json', { cases: [{ agent: 'assistant', response: 'hi', expect: 'allow', determining: ['permit-all'] }] });
  const r = policyTest(dir, [cases]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /permitted by permit-all$/m);
});

describe('policy tests a CI reads', () => {
  test('--json prints one JSON document with every case, its decision and the determining policies by label', () => {
    const dir = copyQuickstart();
    const r = policyTest(dir, [], { json: true });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const doc = JSON.parse(r.stdout) as {
      passed: number;
      failed: number;
      total: number;
      policy_set_error: unknown;
      cases: { name: string; agent: string; declared_name: string | null; decision: string; passed: boolean; determining: string[] }[];
    };
    assert.equal(doc.total, 5);
    assert.equal(doc.passed, 5);
    assert.equal(doc.failed, 0);
    assert.equal(doc.policy_set_error, null);
    const secret = doc.cases.find((c) => c.name === 'an answer that mentions a secret is withheld');
    assert.deepEqual(secret?.determining, ['forbid-secret-content']);
    assert.equal(secret?.decision, 'deny');
    // The alias "helper" runs as its declared name, which is what a policy sees.
    assert.equal(doc.cases.find((c) => c.agent === 'helper')?.declared_name, 'concierge');
  });

  test('--case runs one case; an unknown name is a usage error listing the cases', () => {
    const dir = copyQuickstart();
    const one = policyTest(dir, [], { case: 'an answer that mentions a secret is withheld' });
    assert.equal(one.code, 0, one.stdout + one.stderr);
    assert.match(one.stdout, /^1 case: 1 passed, 0 failed$/m);
    assert.equal(one.stdout.match(/^ {2}pass /gm)?.length, 1);
    const none = policyTest(dir, [], { case: 'no such case' });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^symbi policy test: no case is named "no such case"; the cases are "a plain answer from assistant is released", /);
    assert.equal(none.stderr.split('\n').filter(Boolean).length, 1);
  });

  test('--show-request prints the Cedar request a case builds, without the response text', () => {
    const dir = copyQuickstart();
    const cases = writeCases(work, 'show.json', { cases: [{ name: 'alias', agent: 'helper', response: 'a private answer', expect: 'allow' }] });
    const r = policyTest(dir, [cases], { showRequest: true });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^ {8}note: agent "helper" runs as its declared name "concierge"; policies see context\.agent\.name == "concierge", never the alias$/m,
    );
    const line = /^ {8}request: (.*)$/m.exec(r.stdout)?.[1];
    assert.ok(line !== undefined, r.stdout);
    const request = JSON.parse(line) as {
      principal: { type: string; id: string };
      action: unknown;
      context: { agent: { name: string }; response: { bytes: number } };
      entities: unknown[];
    };
    assert.equal(request.principal.type, 'Agent');
    assert.match(request.principal.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(request.action, { type: 'Action', id: 'respond' });
    assert.equal(request.context.agent.name, 'concierge');
    assert.equal(request.context.response.bytes, Buffer.byteLength('a private answer'));
    assert.ok(!r.stdout.includes('a private answer'), 'the response text is not printed');
    const json = JSON.parse(policyTest(dir, [cases], { showRequest: true, json: true }).stdout) as {
      cases: { request: { principal: { id: string } } }[];
    };
    assert.equal(json.cases[0]?.request.principal.id, request.principal.id);
  });

  test('--junit writes JUnit XML that parses, with a failure element for a failing case', (t) => {
    const dir = copyQuickstart();
    const cases = writeCases(work, 'junit.json', {
      cases: [
        { name: 'passes <&> "quoted"', agent: 'assistant', response: 'fine', expect: 'allow' },
        { name: 'fails', agent: 'assistant', response: 'the secret', expect: 'allow' },
      ],
    });
    const report = path.join(work, `junit-${copies}.xml`);
    const r = symbi(['policy', 'test', '--project', dir, '--junit', report, cases]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const parsed = spawnSync(
      'python3',
      [
        '-c',
        `import json, sys, xml.etree.ElementTree as E
root = E.parse(sys.argv[1]).getroot()
print(json.dumps({"tag": root.tag, "tests": root.get("tests"), "failures": root.get("failures"),
  "cases": [[c.get("name"), [f.get("message") for f in c.findall("failure")]] for c in root.iter("testcase")]}))`,
        report,
      ],
      { encoding: 'utf8' },
    );
    // python3 is this test's independent XML parser. Here python3 is often a pyenv shim (bash, then
    // pyenv, then python), so it is started once, for the parse, and a missing one (ENOENT, or the
    // shell's 127 for a command not found) skips the test rather than failing it.
    if (parsed.error !== undefined || parsed.status === 127) {
      t.skip('python3 (the XML parser this test uses) is not installed');
      return;
    }
    assert.equal(parsed.status, 0, parsed.stderr);
    const doc = JSON.parse(parsed.stdout) as { tag: string; tests: string; failures: string; cases: [string, string[]][] };
    assert.equal(doc.tag, 'testsuites');
    assert.equal(doc.tests, '2');
    assert.equal(doc.failures, '1');
    assert.deepEqual(doc.cases[0], ['passes <&> "quoted"', []]);
    assert.equal(doc.cases[1]?.[0], 'fails');
    assert.match(doc.cases[1]?.[1][0] ?? '', /^deny, expected allow: forbidden by forbid-secret-content$/);
  });

  test('a broken policy set is reported once and no case runs, in text, --json and --junit', () => {
    const dir = copyQuickstart();
    fs.writeFileSync(
      path.join(dir, 'policies', 'mcp-server', 'respond.cedar'),
      '@id("typo")\npermit (principal, action, resource)\nwhen { context.respnse.bytes > 0 };\n',
    );
    const text = policyTest(dir);
    assert.equal(text.code, 1);
    assert.equal(text.stdout, '');
    const lines = text.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, text.stderr);
    assert.match(
      lines[0]!,
      /^symbi policy test: the policy set \(the project policy set\) used by policies\/tests\/respond\.json denies every response, so no case was run: .*typo: /,
    );
    const json = policyTest(dir, [], { json: true });
    assert.equal(json.code, 1);
    const doc = JSON.parse(json.stdout) as { total: number; cases: unknown[]; policy_set_error: { message: string } };
    assert.equal(doc.total, 0);
    assert.deepEqual(doc.cases, []);
    assert.match(doc.policy_set_error.message, /typo: /);
    const report = path.join(work, `broken-${copies}.xml`);
    policyTest(dir, [], { junit: report });
    const xmlText = fs.readFileSync(report, 'utf8');
    assert.equal(xmlText.match(/<failure /g)?.length, 1);
  });

  test('validate and check name a failing policy by its @id, and check fails the file that holds it', async () => {
    const dir = copyQuickstart();
    fs.writeFileSync(
      path.join(dir, 'policies', 'mcp-server', 'respond.cedar'),
      '@id("typo")\npermit (principal, action, resource)\nwhen { context.respnse.bytes > 0 };\n',
    );
    const validate = policyValidate(dir);
    assert.match(validate.stdout, /^policies\/mcp-server\/respond\.cedar:3:\d+: error: typo: /m);
    assert.doesNotMatch(validate.stdout, /cedar#\d/);
    // `symbi check --json` prints this report as JSON (check-cli.test.ts runs the command).
    const checkJson = JSON.stringify(await buildCheckReport(pinProject(dir, serverEnv()), { strict: false, online: false }, serverEnv()), null, 2);
    assert.doesNotMatch(checkJson, /cedar#\d/);
    const doc = JSON.parse(checkJson) as { policy: { notices: string[]; deny_reason: string } };
    assert.ok(
      doc.policy.notices.includes('policies/mcp-server/respond.cedar: rejected: 1 policy fails validation against the respond schema'),
      doc.policy.notices.join('\n'),
    );
    assert.match(doc.policy.deny_reason, /typo: /);
    // The text report as a process, with what reaches standard error besides it.
    const textCheck = symbi(['check', '--project', dir]);
    assert.doesNotMatch(textCheck.stdout + textCheck.stderr, /ok.*respond\.cedar: loaded/);
  });
});

test("docs/cedar-policies.md's two ways to target one agent hold for the alias's declared name, and the alias never matches", () => {
  const dir = copyQuickstart();
  const docs = fs.readFileSync(path.join(repoRoot, 'docs', 'cedar-policies.md'), 'utf8');
  const section = docs.slice(docs.indexOf('## Targeting one agent'));
  const example = /```cedar\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(example !== undefined, 'the section has a Cedar example');
  // The documented principal is the one the server gives concierge (helper's declared name). As a
  // process: --case, --show-request and --json as the command line passes them.
  const shown = symbi(['policy', 'test', '--project', dir, '--case', 'helper answers as concierge and is released', '--show-request', '--json']);
  const principal = (JSON.parse(shown.stdout) as { cases: { request: { principal: { id: string } } }[] }).cases[0]?.request.principal.id;
  assert.ok(principal !== undefined && example.includes(`Agent::"${principal}"`), `the documented UUID is concierge's: ${principal}`);
  fs.writeFileSync(path.join(dir, 'policies', 'targeted.cedar'), example);
  fs.writeFileSync(
    path.join(dir, 'policies', 'alias.cedar'),
    '@id("by-alias")\nforbid (principal, action, resource) when { context.agent.name == "helper" };\n',
  );
  const long = 'x'.repeat(3000);
  const cases = writeCases(work, 'targeted.json', {
    policies: ['policies/targeted.cedar', 'policies/alias.cedar'],
    cases: [
      { name: 'concierge, short', agent: 'helper', response: 'hello', expect: 'allow', determining: ['concierge-by-principal'] },
      { name: 'concierge, long', agent: 'helper', response: long, expect: 'deny', determining: ['concierge-only-greets'] },
      { name: 'another agent', agent: 'assistant', response: 'hello', expect: 'deny', determining: [] },
    ],
  });
  const r = policyTest(dir, [cases]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /by-alias/);
  assert.equal(r.stdout.match(/note: agent "helper" runs as its declared name "concierge"/g)?.length, 2);
});

test('--junit to a path that cannot be written: one line saying so, exit 1, and the results still printed', () => {
  const dir = copyQuickstart();
  const r = policyTest(dir, [], { junit: work });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^symbi policy test: --junit .* cannot be written \(EISDIR\); allowed: a writable file path\n$/);
  assert.match(r.stdout, /^5 cases: 5 passed, 0 failed$/m);
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { RESERVED_POLICY_DIRECTORIES_MAX } from '../../src/shared/limits.js';
import { pinProject, ReservedDirectoriesError } from '../../src/shared/confinement/index.js';
import { makeProject, removeProject } from '../support/project.js';
import { type RunningServer, serverCommand, serverEnv, startServer, textOf, waitForStderr } from '../support/server.js';
import { namespaceSkip } from '../support/mount-namespace.js';

// policies/ and .symbiont/ are reserved by what they are (device and inode,
// found at startup), not only by their spelling. A bind mount in a private
// mount namespace stands in for every other name a directory can have (a
// case-insensitive volume's Policies/, a second mount of the same tree): the
// server runs in the namespace, and no tool reaches the reserved directories
// through the alias. Mounts that need no project of their own share one server.

const MARKER = 'RESERVED-MARKER-41c2';
const GOOD = 'agent good {\n}\n';
const POLICY = '@id("permit-respond")\npermit (principal, action == Action::"respond", resource);\n';

/** `project`/`rel` quoted for sh. */
function quoted(project: string, rel: string): string {
  return `'${path.join(project, rel).replaceAll("'", "'\\''")}'`;
}

/** `unshare -m` with the shell commands `before`, then each [source, target] bind-mounted (paths below `project`), then the server. */
function bindLauncher(project: string, binds: ReadonlyArray<[string, string]>, before: string[] = []): string[] {
  const mounts = [...before, ...binds.map(([from, to]) => `mount --bind ${quoted(project, from)} ${quoted(project, to)}`)].join(' && ');
  return ['unshare', '-m', 'sh', '-c', `${mounts} && exec "$0" "$@"`];
}

describe('reserved directories by identity, and mounts in the project (in a private mount namespace)', { skip: namespaceSkip() }, () => {
  let project: string;
  let server: RunningServer | undefined;

  before(async () => {
    project = makeProject(
      {
        'agents/good.symbi': GOOD,
        'agents/sub/ok.symbi': GOOD,
        'policies/mcp-server/respond.cedar': POLICY,
        'policies/x.symbi': `agent leaked { } // ${MARKER}\n`,
        'policies/sub/y.symbi': `agent leaked { } // ${MARKER}\n`,
        '.symbiont/governed/leak.symbi': `agent leaked { } // ${MARKER}\n`,
      },
      'symbi-reserved-',
    );
    const dirs = ['agents/alias', 'agents/subalias', 'agents/storage', 'agents/governed', 'agents/ov', 'agents/tmp', 'agents/bound', 'agents/empty'];
    for (const dir of dirs) fs.mkdirSync(path.join(project, dir));
    fs.chmodSync(path.join(project, '.symbiont'), 0o700);
    fs.chmodSync(path.join(project, '.symbiont/governed'), 0o700);
    // One server for the aliases and the other mounts: each test asks by its own paths.
    const q = (rel: string): string => quoted(project, rel);
    server = await startServer(project, {
      launcher: bindLauncher(
        project,
        [
          ['policies', 'agents/alias'],
          ['policies/sub', 'agents/subalias'],
          ['.symbiont', 'agents/storage'],
          ['.symbiont/governed', 'agents/governed'],
          ['agents/sub', 'agents/bound'],
        ],
        [
          // A lower-only overlay needs two layers: policies/ over an empty folder.
          `mount -t overlay overlay -o lowerdir=${q('policies')}:${q('agents/empty')} ${q('agents/ov')}`,
          `mount -t tmpfs none ${q('agents/tmp')}`,
          `printf 'agent t {\\n}\\n' > ${q('agents/tmp/t.symbi')}`,
        ],
      ),
    });
  });

  after(async () => {
    await server?.close();
    removeProject(project);
  });

  it('parse_dsl {file} through an alias of policies/, a folder in it, .symbiont/ or its folders is refused, naming what it is', async () => {
    const served = server!;
    const refused: Array<[string, RegExp]> = [
      ['agents/alias/x.symbi', /agents\/alias is policies\/ reached under another name; the policies directory is not readable/],
      ['agents/alias/sub/y.symbi', /agents\/alias is policies\/ reached under another name/],
      ['agents/subalias/y.symbi', /agents\/subalias is policies\/sub\/ reached under another name/],
      ['agents/storage/governed/leak.symbi', /agents\/storage is \.symbiont\/ reached under another name; the server's own storage/],
      ['agents/governed/leak.symbi', /agents\/governed is \.symbiont\/governed\/ reached under another name/],
    ];
    for (const [file, reason] of refused) {
      const result = await served.call('parse_dsl', { file });
      assert.equal(result.isError, true, `${file}: ${textOf(result)}`);
      assert.match(textOf(result), reason, file);
      assert.ok(!JSON.stringify(result).includes(MARKER), `${file}: nothing of the reserved file`);
    }
    for (const file of ['agents/good.symbi', 'agents/sub/ok.symbi']) {
      const result = await served.call('parse_dsl', { file });
      assert.equal(result.isError, undefined, `${file}: ${textOf(result)}`);
    }
    const stderr = await waitForStderr(served, (t) => t.includes('serving MCP'));
    assert.match(stderr, /policies\/mcp-server\/respond\.cedar: loaded 1 polic/, stderr);
  });

  // Mounts inside the project are not descended into (overlay and tmpfs).
  it('an overlay with policies/ as its lower layer, and a tmpfs, are refused; a bind mount of an ordinary folder on the same file system is read', async () => {
    const served = server!;
    for (const file of ['agents/ov/x.symbi', 'agents/tmp/t.symbi']) {
      const result = await served.call('parse_dsl', { file });
      assert.equal(result.isError, true, `${file}: ${textOf(result)}`);
      const dir = file.split('/').slice(0, 2).join('/');
      assert.match(textOf(result), new RegExp(`path refused: ${dir} is on another file system than the project \\(a mount point inside it\\)`), file);
      assert.ok(!JSON.stringify(result).includes(MARKER), `${file}: nothing of the reserved file`);
    }
    const bound = await served.call('parse_dsl', { file: 'agents/bound/ok.symbi' });
    assert.equal(bound.isError, undefined, textOf(bound));
  });

  it('an agents/ that is policies/ under another name loads no agents: list_agents and get_agent_dsl show nothing of it', async () => {
    const other = makeProject({ 'policies/leaked.symbi': `agent leaked { } // ${MARKER}\n`, 'policies/respond.cedar': POLICY }, 'symbi-reserved-agents-');
    fs.mkdirSync(path.join(other, 'agents'));
    const server = await startServer(other, { launcher: bindLauncher(other, [['policies', 'agents']]) });
    try {
      const list = await server.call('list_agents', {});
      assert.deepEqual((list.structuredContent as { agents: unknown[] }).agents, [], textOf(list));
      const dsl = await server.call('get_agent_dsl', { agent: 'leaked' });
      assert.equal(dsl.isError, true);
      assert.ok(!JSON.stringify([list, dsl]).includes(MARKER));
      const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
      assert.match(stderr, /agents\/ is a reserved directory \(policies\/ or \.symbiont\/\) reached under another name, so no agents were loaded/, stderr);
    } finally {
      await server.close();
      removeProject(other);
    }
  });
});

/** Runs `symbi mcp` on `project` with standard input closed (a server that starts then ends at once, exit 0): its exit code and output. */
function runUntilExit(project: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const { command, args } = serverCommand(project);
    const child = spawn(command, args, { env: serverEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr, stdout }));
    child.stdin.end();
  });
}

function folders(count: number, under: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`${under}/f${String(i).padStart(3, '0')}/.keep`] = '';
  return files;
}

describe('reserved directories have no silent budget', () => {
  it(`a project with more than ${RESERVED_POLICY_DIRECTORIES_MAX} folders below policies/ is refused at startup, in one line naming the limit and the count`, async () => {
    const project = makeProject({ 'agents/good.symbi': GOOD, 'policies/respond.cedar': POLICY, ...folders(300, 'policies') }, 'symbi-reserved-budget-');
    try {
      const run = await runUntilExit(project);
      assert.notEqual(run.code, 0);
      assert.equal(run.stdout, '', 'nothing on the MCP channel');
      const lines = run.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `^symbi mcp: --project .*: policies/ holds 300 folders; at most ${RESERVED_POLICY_DIRECTORIES_MAX} can be recorded .*, so the server does not start$`,
        ),
      );
      assert.ok(!fs.existsSync(path.join(project, '.symbiont')), 'nothing was created');
    } finally {
      removeProject(project);
    }
  });

  it('a policies/ folder whose name is not valid UTF-8 is refused at startup (it could not be recorded)', () => {
    const project = makeProject({ 'agents/good.symbi': GOOD, 'policies/respond.cedar': POLICY }, 'symbi-reserved-utf8-');
    try {
      fs.mkdirSync(Buffer.concat([Buffer.from(path.join(project, 'policies') + '/'), Buffer.from([0x66, 0xff])]));
      // Pinning the project decides; `symbi mcp` turns a ReservedDirectoriesError into the usage line and exit the case above shows.
      assert.throws(
        () => pinProject(project),
        (err: Error) =>
          err instanceof ReservedDirectoriesError && /^policies\/ holds a name that is not valid UTF-8, so what it names cannot be reserved$/.test(err.message),
      );
    } finally {
      removeProject(project);
    }
  });
});

describe(
  'reserved directories: .symbiont/ recorded first and always, policies/ at any depth (bind mounts in a private mount namespace)',
  { skip: namespaceSkip() },
  () => {
    it(`with ${RESERVED_POLICY_DIRECTORIES_MAX} folders below policies/ (the limit) and a deep one, .symbiont/ and the deepest folder under other names are refused`, async () => {
      const deep = 'policies/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10';
      const project = makeProject(
        {
          'agents/good.symbi': GOOD,
          'policies/respond.cedar': POLICY,
          ...folders(RESERVED_POLICY_DIRECTORIES_MAX - 10, 'policies'),
          [`${deep}/deep.symbi`]: `agent leaked { } // ${MARKER}\n`,
          '.symbiont/governed/leak.symbi': `agent leaked { } // ${MARKER}\n`,
        },
        'symbi-reserved-first-',
      );
      try {
        fs.chmodSync(path.join(project, '.symbiont'), 0o700);
        fs.chmodSync(path.join(project, '.symbiont/governed'), 0o700);
        for (const dir of ['agents/s', 'agents/g', 'agents/deep']) fs.mkdirSync(path.join(project, dir));
        const server = await startServer(project, {
          launcher: bindLauncher(project, [
            ['.symbiont', 'agents/s'],
            ['.symbiont/governed', 'agents/g'],
            [deep, 'agents/deep'],
          ]),
        });
        try {
          const refused: Array<[string, RegExp]> = [
            ['agents/s/governed/leak.symbi', /agents\/s is \.symbiont\/ reached under another name/],
            ['agents/g/leak.symbi', /agents\/g is \.symbiont\/governed\/ reached under another name/],
            ['agents/deep/deep.symbi', /agents\/deep is policies\/d1\/d2\/d3\/d4\/d5\/d6\/d7\/d8\/d9\/d10\/ reached under another name/],
          ];
          for (const [file, reason] of refused) {
            const result = await server.call('parse_dsl', { file });
            assert.equal(result.isError, true, `${file}: ${textOf(result)}`);
            assert.match(textOf(result), reason, file);
            assert.ok(!JSON.stringify(result).includes(MARKER), `${file}: nothing of the reserved file`);
          }
        } finally {
          await server.close();
        }
      } finally {
        removeProject(project);
      }
    });
  },
);

describe('a mount over agents/ (tmpfs in a private mount namespace)', { skip: namespaceSkip() }, () => {
  it('an agents/ that is a mount of another file system loads no agents, and standard error says why', async () => {
    const project = makeProject({ 'agents/good.symbi': GOOD, 'policies/respond.cedar': POLICY }, 'symbi-reserved-agents-mount-');
    try {
      const agents = `'${path.join(project, 'agents').replaceAll("'", "'\\''")}'`;
      const launcher = ['unshare', '-m', 'sh', '-c', `mount -t tmpfs none ${agents} && printf 'agent t {\\n}\\n' > ${agents}/t.symbi && exec "$0" "$@"`];
      const server = await startServer(project, { launcher });
      try {
        const list = await server.call('list_agents', {});
        assert.deepEqual((list.structuredContent as { agents: unknown[] }).agents, [], textOf(list));
        const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
        assert.match(stderr, /agents\/ cannot be opened \(other_device\), so no agents were loaded/, stderr);
      } finally {
        await server.close();
      }
    } finally {
      removeProject(project);
    }
  });
});

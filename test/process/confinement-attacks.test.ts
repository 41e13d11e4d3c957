import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeProject, removeProject, tempDir, writeFiles } from '../support/project.js';
import { type RunningServer, startServer, textOf, waitForStderr } from '../support/server.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { leftOutOf } from '../support/confinement-reruns.js';

// The confinement attack suite: hostile project paths through parse_dsl and
// through startup discovery. Nothing outside the project, nothing behind a
// symlink or hard link, nothing hidden or under policies/ is ever returned, no
// refusal hangs, and the server keeps answering after every case.

const MARKER = 'SECRET-MARKER-7f3a9c';
const GOOD = 'agent good {\n}\n';
const MiB = 1024 * 1024;

describe('confinement: parse_dsl and discovery refuse hostile paths', () => {
  let outside: string;
  let project: string;
  let server: RunningServer;
  let socketServer: net.Server;

  before(async () => {
    outside = tempDir('symbi-outside-');
    writeFiles(outside, {
      'secret.symbi': `agent leaked { } // ${MARKER}\n`,
      'dir/x.symbi': `agent leaked { } // ${MARKER}\n`,
      'hard-target.symbi': `agent leaked { } // ${MARKER}\n`,
    });
    project = makeProject({
      'agents/good.symbi': GOOD,
      'agents/bad-utf8.symbi': Buffer.from([0x61, 0x67, 0xff, 0xfe, 0x0a]),
      'agents/big.symbi': `//${'x'.repeat(MiB - 2)}\n`, // one byte over 1 MiB
      'agents/exact.symbi': `//${'x'.repeat(MiB - 3)}\n`, // exactly 1 MiB
      'agents/.hidden.symbi': `agent hidden { } // ${MARKER}\n`,
      'agents/notes.md': 'not a source',
      'a/b/c/real.symbi': GOOD,
      'policies/x.cedar': 'permit(principal, action, resource);\n',
      'policies/x.symbi': `agent policy { } // ${MARKER}\n`,
      '.git/config': `[core]\n# ${MARKER}\n`,
      '.env': `TOKEN=${MARKER}\n`,
      'inner.symbi': GOOD,
      // What a lone surrogate in a caller's path would become if it were encoded with a replacement character.
      'a/\ufffd.symbi': `agent replaced { } // ${MARKER}\n`,
    });
    const p = (rel: string) => path.join(project, rel);
    fs.symlinkSync(path.join(outside, 'secret.symbi'), p('agents/link-out.symbi'));
    fs.symlinkSync('good.symbi', p('agents/link-in.symbi'));
    fs.symlinkSync('/dev/zero', p('agents/zero.symbi'));
    fs.symlinkSync('/proc/self/environ', p('agents/environ.symbi'));
    fs.symlinkSync('loop.symbi', p('agents/loop.symbi'));
    fs.linkSync(path.join(outside, 'hard-target.symbi'), p('agents/hard.symbi'));
    fs.linkSync(p('inner.symbi'), p('agents/hard-in.symbi'));
    fs.mkdirSync(p('agents/dir.symbi'));
    assert.equal(spawnSync('mkfifo', [p('agents/fifo.symbi')]).status, 0, 'mkfifo');
    socketServer = net.createServer();
    await new Promise<void>((resolve) => socketServer.listen(p('agents/sock.symbi'), resolve));
    fs.symlinkSync(path.join(outside, 'dir'), p('linkdir'));
    fs.symlinkSync(path.join(outside, 'dir'), p('a/linkdir'));
    fs.symlinkSync(path.join(outside, 'dir'), p('a/b/linkdir'));
    fs.symlinkSync(path.join(outside, 'dir'), p('a/b/c/linkdir'));
    fs.symlinkSync('agents', p('inlink'));
    fs.symlinkSync('/', p('root'));
    fs.mkdirSync(p('.symbiont/governed'), { recursive: true, mode: 0o700 });
    fs.chmodSync(p('.symbiont'), 0o700);
    server = await startServer(project);
  });

  after(async () => {
    await server.close();
    socketServer.close();
    removeProject(project);
    removeProject(outside);
  });

  const refused: Array<[string, string | (() => string), RegExp]> = [
    ['symlink at the final component (outside)', 'agents/link-out.symbi', /is a symlink; symlinks are never followed/],
    ['symlink at the final component (inside)', 'agents/link-in.symbi', /is a symlink/],
    ['symlink to /dev/zero', 'agents/zero.symbi', /is a symlink/],
    ['symlink to /proc/self/environ', 'agents/environ.symbi', /is a symlink/],
    ['symlink loop', 'agents/loop.symbi', /is a symlink/],
    ['symlink at the first component', 'linkdir/x.symbi', /linkdir: (is a symlink|a path component is not a directory)/],
    ['symlink at the second component', 'a/linkdir/x.symbi', /a\/linkdir: (is a symlink|a path component is not a directory)/],
    ['symlink at the third component', 'a/b/linkdir/x.symbi', /a\/b\/linkdir: (is a symlink|a path component is not a directory)/],
    ['symlink at the fourth component', 'a/b/c/linkdir/x.symbi', /a\/b\/c\/linkdir: (is a symlink|a path component is not a directory)/],
    ['symlink to an inside directory', 'inlink/good.symbi', /inlink: (is a symlink|a path component is not a directory)/],
    ['symlink to the file system root', 'root/etc/passwd.symbi', /root: (is a symlink|a path component is not a directory)/],
    ['hard link to a file outside', 'agents/hard.symbi', /has 2 hard links; hardlinked files are refused/],
    ['hard link inside the project', 'agents/hard-in.symbi', /hard links/],
    ['FIFO', 'agents/fifo.symbi', /is not a regular file/],
    ['unix socket', 'agents/sock.symbi', /is not a regular file|cannot be opened/],
    ['directory', 'agents/dir.symbi', /is a directory, not a regular file/],
    ['non-UTF-8 bytes', 'agents/bad-utf8.symbi', /is not valid UTF-8 text/],
    ['one byte over the 1 MiB limit', 'agents/big.symbi', /is 1048577 bytes; the limit is 1048576 bytes/],
    ['parent traversal', '../secret.symbi', /parent traversal/],
    ['parent traversal after a component', 'agents/../../secret.symbi', /parent traversal/],
    ['parent traversal back inside', 'agents/../agents/good.symbi', /parent traversal/],
    ['absolute path outside', () => path.join(outside, 'secret.symbi'), /absolute paths are not allowed/],
    ['absolute path into the project', () => path.join(project, 'agents/good.symbi'), /absolute paths are not allowed/],
    ['absolute /etc/passwd', '/etc/passwd', /absolute paths are not allowed/],
    ['.git/config', '.git/config', /hidden component ".git"/],
    ['.env', '.env', /hidden component ".env"/],
    ['audit signing key', '.symbiont/governed/audit-signing.key', /hidden component ".symbiont"/],
    ['hidden agent source', 'agents/.hidden.symbi', /hidden component ".hidden.symbi"/],
    ['policies/x.cedar', 'policies/x.cedar', /policies directory is not readable/],
    ['a .symbi under policies/', 'policies/x.symbi', /policies directory is not readable/],
    ['policies/ behind ./', './policies/x.symbi', /policies directory is not readable/],
    ['policies/ behind a double slash', './/policies//x.symbi', /policies directory is not readable/],
    ['empty path', '', /the path is empty/],
    ['NUL byte', 'agents/good.symbi\u0000.symbi', /contains a NUL byte/],
    ['backslash', 'agents\\good.symbi', /contains a backslash/],
    ['backslash traversal', '..\\..\\etc\\passwd.symbi', /contains a backslash/],
    ['the project root', '.', /names the project root/],
    ['a lone slash', '/', /absolute paths are not allowed/],
    ['a directory path with a trailing slash', 'agents/', /must name a \.symbi or \.dsl file/],
    ['a component that is a file', 'agents/good.symbi/x.symbi', /not a directory/],
    ['a missing file', 'agents/missing.symbi', /no such file in the project/],
    ['an over-long path', `${'d/'.repeat(2100)}x.symbi`, /longer than 4096 bytes/],
    ['wrong extension', 'agents/notes.md', /must name a \.symbi or \.dsl file/],
    ['tilde is not home', '~/secret.symbi', /no such file in the project/],
    ['a lone high surrogate', 'a/\ud800.symbi', /the path contains an unpaired UTF-16 surrogate/],
    ['a lone low surrogate', 'a/\udc00.symbi', /the path contains an unpaired UTF-16 surrogate/],
    ['a lone surrogate in a directory', 'a\ud800/real.symbi', /the path contains an unpaired UTF-16 surrogate/],
  ];

  it(`refuses ${refused.length} hostile paths through parse_dsl and keeps serving`, async () => {
    assert.ok(refused.length >= 40);
    for (const [what, given, pattern] of refused) {
      const file = typeof given === 'function' ? given() : given;
      const result = await server.call('parse_dsl', { file });
      const text = textOf(result);
      assert.equal(result.isError, true, `${what}: refused`);
      assert.match(text, pattern, `${what}: ${text}`);
      assert.ok(!text.includes('\n'), `${what}: one line`);
      assert.ok(!text.includes(MARKER), `${what}: no secret content`);
      assert.ok(!JSON.stringify(result).includes(outside) || file.startsWith('/'), `${what}: outside path not revealed`);
      const health = await server.call('get_agent_dsl', { agent: 'good' });
      assert.equal(textOf(health), GOOD, `${what}: server keeps working`);
    }
  });

  it('reads the positive controls', async () => {
    for (const file of ['agents/good.symbi', 'a/b/c/real.symbi', 'agents/exact.symbi']) {
      const result = await server.call('parse_dsl', { file });
      assert.equal(result.isError, undefined, `${file}: ${textOf(result)}`);
    }
  });

  it('leaves every hostile agent source out of the startup snapshot, saying why', async () => {
    const list = await server.call('list_agents');
    const data = list.structuredContent as { agents: Array<{ file: string }>; left_out: Array<{ file: string; reason: string }> };
    assert.deepEqual(data.agents.map((a) => a.file).sort(), ['agents/exact.symbi', 'agents/good.symbi']);
    const reasons = new Map(data.left_out.map((s) => [s.file, s.reason]));
    const expected: Record<string, RegExp> = {
      'agents/link-out.symbi': /symlink/,
      'agents/link-in.symbi': /symlink/,
      'agents/zero.symbi': /symlink/,
      'agents/environ.symbi': /symlink/,
      'agents/loop.symbi': /symlink/,
      'agents/hard.symbi': /hard links/,
      'agents/hard-in.symbi': /hard links/,
      'agents/fifo.symbi': /not a regular file/,
      'agents/sock.symbi': /not a regular file|cannot be opened/,
      'agents/dir.symbi': /is a directory/,
      'agents/bad-utf8.symbi': /not valid UTF-8/,
      'agents/big.symbi': /1048577 bytes; the limit is 1048576/,
      'agents/.hidden.symbi': /hidden/,
    };
    for (const [file, pattern] of Object.entries(expected)) {
      assert.match(reasons.get(file) ?? '(not listed)', pattern, file);
    }
    assert.ok(!JSON.stringify(data).includes(MARKER));
    const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
    assert.match(stderr, /left out agents\/link-out\.symbi: is a symlink/);
    assert.match(stderr, /left out agents\/fifo\.symbi: is not a regular file/);
    assert.match(stderr, /left out agents\/big\.symbi: is 1048577 bytes/);
    assert.ok(!stderr.includes(MARKER));
    const hidden = await server.call('get_agent_dsl', { agent: 'link-out' });
    assert.equal(hidden.isError, true);
    assert.ok(!textOf(hidden).includes(MARKER));
  });
});

// Startup discovery through the route, in sessions served in this process: the route is chosen from
// the session's environment (serverEnv(): SYMBI_CONFINEMENT_ROUTE when a rerun forces one), as a
// server chooses it from its own, and the startup lines are the same operator log. The server process
// above stands for the attacks end to end.
describe('confinement: a symlinked agents/ directory and discovery limits', () => {
  it(
    'loads no agents through a symlinked agents/ and refuses reads through it',
    { skip: leftOutOf(['no-proc'], 'the route opens without /proc either way') },
    async () => {
      const outside = makeProject({ 'agents/secret.symbi': `agent leaked { } // ${MARKER}\n` }, 'symbi-outside-');
      const project = makeProject({ 'AGENTS.md': '# hi\n' });
      fs.symlinkSync(path.join(outside, 'agents'), path.join(project, 'agents'));
      const server = await startInProcessServer(project);
      try {
        const list = await server.call('list_agents');
        assert.deepEqual((list.structuredContent as { agents: unknown[] }).agents, []);
        const read = await server.call('parse_dsl', { file: 'agents/secret.symbi' });
        assert.equal(read.isError, true);
        assert.match(textOf(read), /agents: (is a symlink|a path component is not a directory)/);
        const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
        assert.match(stderr, /agents\/ is a symlink; symlinks are never followed, so no agents were loaded/);
        assert.ok(!stderr.includes(MARKER) && !JSON.stringify(list).includes(MARKER));
      } finally {
        await server.close();
        removeProject(project);
        removeProject(outside);
      }
    },
  );

  it('stops at 1,024 directory entries and says so', { skip: leftOutOf(['no-proc'], 'the route lists without /proc either way') }, async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1030; i++) files[`agents/a${String(i).padStart(4, '0')}.symbi`] = `agent a${i} {\n}\n`;
    const project = makeProject(files);
    const server = await startInProcessServer(project);
    try {
      const list = await server.call('list_agents');
      const data = list.structuredContent as { agents: unknown[]; limits_hit: string[] };
      assert.equal(data.agents.length, 1024);
      assert.match(data.limits_hit.join(' '), /more than 1024 entries; discovery stopped after 1024/);
      const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
      assert.match(stderr, /limit hit: directory entry limit/);
      assert.match(stderr, /and 974 more agents \(the list_agents tool shows all\)/);
    } finally {
      await server.close();
      removeProject(project);
    }
  });

  it(
    'stops retaining sources past 16 MiB and says so',
    { skip: leftOutOf(['route', 'no-proc'], 'the retained-bytes limit counts what was read, whichever route read it') },
    async () => {
      const body = `//${'y'.repeat(MiB - 3)}\n`; // 1 MiB each
      const files: Record<string, string> = {};
      for (let i = 0; i < 17; i++) files[`agents/f${String(i).padStart(2, '0')}.symbi`] = body;
      const project = makeProject(files);
      const server = await startInProcessServer(project);
      try {
        const list = await server.call('list_agents');
        const data = list.structuredContent as { agents: Array<{ file: string }>; left_out: Array<{ file: string; reason: string }>; limits_hit: string[] };
        assert.equal(data.agents.length, 16);
        assert.deepEqual(
          data.left_out.map((s) => s.file),
          ['agents/f16.symbi'],
        );
        assert.match(data.left_out[0]!.reason, /retained-bytes limit of 16777216 bytes/);
        assert.match(data.limits_hit.join(' '), /retained-bytes limit/);
        const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
        assert.match(stderr, /limit hit: retained-bytes limit/);
      } finally {
        await server.close();
        removeProject(project);
      }
    },
  );
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ANSWER, startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { platformLabel } from '../../src/shared/confinement/routes.js';
import { makeProject, removeProject } from '../support/project.js';
import { providerEnv, type RunningServer, startServer, textOf, waitForStderr } from '../support/server.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { inspect } from '../support/journal.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { routeSkip } from '../support/route-required.js';

// Project file confinement where /proc is missing or lies, made real: the
// server runs in its own mount namespace with an empty tmpfs (or a forgery)
// over /proc, and a real MCP client drives it over stdio. The libc and openat2
// routes must serve everything there; the /proc route, forced, must refuse
// everything with one line naming the platform and the failed check. A route
// built on deliberately wrong constants must refuse the same way (in sessions
// served in this process, below).

const PROJECT_FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'AGENTS.md': '# Project notes\n<!-- agents-md:auto-start -->\nBe brief.\n<!-- agents-md:auto-end -->\n',
  'policies/mcp-server/respond.cedar': '@id("permit-respond")\npermit (principal, action == Action::"respond", resource);\n',
};
const PLATFORM = platformLabel();
const REFUSED = new RegExp(`project files are unavailable: project file confinement cannot be proven on this ${PLATFORM} system`);

// What /proc holds for the server: nothing, or a forgery whose /proc/self/fd/<n>
// are plain empty directories.
type ProcMount = 'empty' | 'forged';
const MOUNT_SCRIPTS: Record<ProcMount, string> = {
  empty: 'mount -t tmpfs none /proc && exec "$0" "$@"',
  forged: 'mount -t tmpfs none /proc && for n in $(seq 0 99); do mkdir -p /proc/self/fd/$n; done && exec "$0" "$@"',
};

/** The server on `project` with `proc` mounted over /proc for it, in a private mount namespace. */
function serve(project: string, proc: ProcMount, env: Record<string, string>): Promise<RunningServer> {
  return startServer(project, { env, launcher: ['unshare', '-m', 'sh', '-c', MOUNT_SCRIPTS[proc]] });
}

const FILE_TOOLS = [
  ['list_agents', {}],
  ['get_agent_dsl', { agent: 'assistant' }],
  ['parse_dsl', { file: 'agents/assistant.symbi' }],
  ['get_agents_md', {}],
  ['invoke_agent', { agent: 'assistant', prompt: 'hello' }],
] as const;

/** Every file tool, the AGENTS.md resource and invoke_agent refuse with `reason`; nothing ran. */
async function assertRefusesEverything(served: Pick<RunningServer, 'call' | 'client'>, reason: RegExp): Promise<void> {
  for (const [tool, args] of FILE_TOOLS) {
    const result = await served.call(tool, args);
    assert.equal(result.isError, true, `${tool}: ${textOf(result)}`);
    assert.match(textOf(result), reason, tool);
    assert.doesNotMatch(textOf(result), /unknown agent|does not exist|no such file/, tool);
    assert.equal(result.structuredContent, undefined, `${tool}: no audit reference, nothing ran`);
  }
  await assert.rejects(served.client.readResource({ uri: 'file:///AGENTS.md' }), (err: Error) => reason.test(err.message));
}

describe('without /proc (tmpfs over /proc in a private mount namespace)', { skip: namespaceSkip() }, () => {
  let project: string;
  let endpoint: SyntheticEndpoint;
  let env: Record<string, string>;

  before(async () => {
    project = makeProject(PROJECT_FILES, 'symbi-noproc-');
    fs.symlinkSync('/etc/passwd', path.join(project, 'agents', 'escape.symbi'));
    endpoint = await startSyntheticEndpoint();
    env = providerEnv(endpoint.url, { HOME: os.tmpdir() });
  });

  after(async () => {
    await endpoint.close();
    removeProject(project);
  });

  for (const route of ['default', 'openat2', 'libc'] as const) {
    it(`serves every tool, invokes and writes a verifying journal (${route === 'default' ? 'route chosen at startup' : `${route} forced`})`, async () => {
      const routeEnv = route === 'default' ? env : { ...env, SYMBI_CONFINEMENT_ROUTE: route };
      const served = await serve(project, 'empty', routeEnv);
      try {
        const stderr = await waitForStderr(served, (t) => t.includes('serving MCP'));
        assert.match(stderr, /project files: confinement route (openat2|libc) /, stderr);
        assert.match(stderr, /policies\/mcp-server\/respond\.cedar: loaded 1 polic/, stderr);

        const list = await served.call('list_agents', {});
        assert.equal(list.isError, undefined, textOf(list));
        assert.equal((list.structuredContent as { agents: unknown[] }).agents.length, 1);
        assert.match(stderr, /escape\.symbi.*symlink/, 'the symlinked agent file is left out, named');
        const dsl = await served.call('get_agent_dsl', { agent: 'assistant' });
        assert.match(textOf(dsl), /agent assistant/);
        const parsed = await served.call('parse_dsl', { file: 'agents/assistant.symbi' });
        assert.equal(parsed.isError, undefined, textOf(parsed));
        const escape = await served.call('parse_dsl', { file: 'agents/escape.symbi' });
        assert.equal(escape.isError, true);
        assert.match(textOf(escape), /is a symlink/);
        assert.doesNotMatch(textOf(escape), /root:/);
        const md = await served.call('get_agents_md', {});
        assert.match(textOf(md), /Project notes/);
        const resource = await served.client.readResource({ uri: 'file:///AGENTS.md' });
        assert.match(JSON.stringify(resource), /Project notes/);

        const invoked = await served.call('invoke_agent', { agent: 'assistant', prompt: 'hello' });
        assert.equal(invoked.isError, undefined, textOf(invoked));
        assert.equal(textOf(invoked), DEFAULT_ANSWER);
        const { audit } = invoked.structuredContent as { audit: { run_id: string; path: string; public_key: string } };
        const verdict = inspect(audit.path, audit.run_id, audit.public_key);
        assert.equal(verdict.status, 0, JSON.stringify(verdict.report));
        assert.equal(verdict.report.journal_complete, true);
      } finally {
        await served.client.close();
      }
    });
  }

  for (const proc of ['empty', 'forged'] as const) {
    it(`refuses everything with the /proc route forced over ${proc === 'empty' ? 'an empty' : 'a forged'} /proc, saying why in one line`, async () => {
      const before = endpoint.requests.length;
      const served = await serve(project, proc, { ...env, SYMBI_CONFINEMENT_ROUTE: 'proc' });
      try {
        await served.client.listTools();
        const stderr = await waitForStderr(served, (t) => t.includes('serving MCP'));
        const lines = stderr.split('\n').filter((l) => REFUSED.test(l));
        assert.equal(lines.length, 1, stderr);
        assert.match(lines[0]!, /route proc failed its self-test: a nested file opens: refused as not_found/);
        assert.match(lines[0]!, /policy set denies every response/);
        assert.doesNotMatch(stderr, /does not exist|not present|default permission|no policy files|agents: 0 found|cannot create storage/, stderr);
        await assertRefusesEverything(served, REFUSED);
        const inline = await served.call('parse_dsl', { content: 'agent inline {}\n' });
        assert.equal(inline.isError, undefined, 'inline DSL needs no project file and still parses');
        assert.equal(endpoint.requests.length, before, 'no request reached the provider');
      } finally {
        await served.client.close();
      }
    });
  }
});

// Each wrong constant breaks one thing the self-test proves; the route must then not serve. These
// sessions are served in this process: the route and its constants come from the session's
// environment (the route is proven in a child process given that environment, as a server's is),
// and the refusal line is the same operator log; the servers above are the process cases.
// What a wrong struct dirent offset reads depends on the platform's layout (the offsets are
// in src/shared/confinement/libc-route.ts):
// - glibc and musl: d_ino 0, d_off 8, d_reclen 16, d_type 18, d_name 19; no d_namlen.
// - macOS with 64-bit inodes (xnu bsd/sys/dirent.h, __DARWIN_STRUCT_DIRENTRY, at
//   apple-oss-distributions/xnu 8d741a5de7ff4191bf97d57b9f54c2f6d4a15585): d_ino u64 0,
//   d_seekoff u64 8, d_reclen u16 16, d_namlen u16 18, d_type u8 20, d_name[1024] 21.
// - FreeBSD 12 and later: d_fileno 0, d_off 8, d_reclen 16, d_type 18, d_pad0 19,
//   d_namlen u16 20, d_pad1 22, d_name 24.
const NAMLEN_DIFFERS =
  /a listing matches fs\.readdirSync byte for byte: EIO: readdir returned a record out of bounds \(d_namlen \d+ differs from the name's \d+ bytes\)/;
const WRONG_NAME_OFFSET: RegExp =
  process.platform === 'linux'
    ? // Offset 20 is the name's second byte: names come back without their first.
      /a listing matches fs\.readdirSync byte for byte: got /
    : // macOS: offset 20 is d_type, read as the name's first byte, one more than d_namlen says.
      // FreeBSD: offset 20 is d_namlen itself, a one-byte "name" that matches only where d_namlen is 1 (".." is not).
      NAMLEN_DIFFERS;
const WRONG_CONSTANTS: readonly [string, RegExp][] = [
  ['{"O_NOFOLLOW":0}', /a symlink as leaf is refused: was not refused/],
  ['{"O_DIRECTORY":0}', /a file opened as a directory is refused: was not refused/],
  ['{"O_NONBLOCK":0}', /the descriptor is non-blocking: O_NONBLOCK is not set/],
  ['{"O_CLOEXEC":0}', /the descriptor is close-on-exec: FD_CLOEXEC is not set/],
  ['{"DIRENT_NAME_OFFSET":20}', WRONG_NAME_OFFSET],
  // Offset 18 holds d_type and the name's first byte on Linux (far more than a record's length), d_namlen on
  // macOS and d_type with a zero pad byte on FreeBSD (both less than the name's offset).
  ['{"DIRENT_RECLEN_OFFSET":18}', /a listing matches fs\.readdirSync byte for byte: EIO: readdir returned a record out of bounds \(d_reclen \d+ is outside/],
  // Offset 16 is d_reclen everywhere: read as d_namlen, it never matches a name's length.
  ['{"DIRENT_NAMLEN_OFFSET":16}', NAMLEN_DIFFERS],
];

describe('the startup self-test refuses a route built on wrong constants', () => {
  const skip = routeSkip('libc');
  let project: string;
  let endpoint: SyntheticEndpoint;

  before(async () => {
    project = makeProject(PROJECT_FILES, 'symbi-wrong-constants-');
    endpoint = await startSyntheticEndpoint();
  });

  after(async () => {
    await endpoint.close();
    removeProject(project);
  });

  for (const [constants, check] of WRONG_CONSTANTS) {
    it(`${constants}: one stderr line names ${PLATFORM} and the failed check; every file tool and invoke_agent refuse`, { skip }, async () => {
      const env = providerEnv(endpoint.url, { SYMBI_CONFINEMENT_ROUTE: 'libc', SYMBI_CONFINEMENT_TEST_CONSTANTS: constants });
      const served = await startInProcessServer(project, { env });
      try {
        await served.client.listTools();
        const stderr = await waitForStderr(served, (t) => t.includes('serving MCP'));
        const lines = stderr.split('\n').filter((l) => REFUSED.test(l));
        assert.equal(lines.length, 1, stderr);
        assert.match(lines[0]!, /route libc failed its self-test: /);
        assert.match(lines[0]!, check);
        await assertRefusesEverything(served, REFUSED);
        assert.equal(endpoint.requests.length, 0, 'no request reached the provider');
        assert.equal(fs.existsSync(path.join(project, '.symbiont')), false, 'no audit storage was created');
      } finally {
        await served.close();
      }
    });
  }
});

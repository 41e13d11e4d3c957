import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { auditOf, providerEnv, startServer, textOf, type RunningServer } from '../support/server.js';

// The audit reference names the journal by the project's path at startup,
// while the journal is written through the directory pinned then. Once that
// path leads elsewhere (the folder renamed and a new empty one made in its
// place), a run would hand back a reference to nothing: it is refused before
// any provider call, with one line, and standard error says so once.

const AGENTS = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

describe('invoke_agent after the project folder moved', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: RunningServer;

  before(async () => {
    project = makeProject(AGENTS, 'project-moved-');
    endpoint = await startSyntheticEndpoint();
    server = await startServer(project, { env: providerEnv(endpoint.url) });
  });

  after(async () => {
    await server.close();
    await endpoint.close();
    removeProject(project);
    removeProject(`${project}-moved`);
  });

  it('is refused without a provider call once the path no longer leads to the pinned project', async () => {
    const first = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
    assert.equal(first.isError, undefined, textOf(first));
    assert.ok(fs.existsSync(auditOf(first).audit.path), 'the reference leads to the journal');
    const requestsBefore = endpoint.requests.length;

    fs.renameSync(project, `${project}-moved`);
    fs.mkdirSync(project);
    for (let i = 0; i < 2; i += 1) {
      const refused = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /the project moved: .* restart/);
      assert.equal((refused as { structuredContent?: unknown }).structuredContent, undefined, 'no audit reference');
      assert.doesNotMatch(textOf(refused), /\n/);
    }
    assert.equal(endpoint.requests.length, requestsBefore, 'the provider was never called');
    assert.deepEqual(fs.readdirSync(project), [], 'nothing was written in the new folder');
    const said = server
      .stderr()
      .split('\n')
      .filter((line) => / warn project\.moved: the project moved/.test(line));
    assert.equal(said.length, 1, server.stderr());

    // The same folder back in its place: runs go through again.
    fs.rmdirSync(project);
    fs.renameSync(`${project}-moved`, project);
    const back = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
    assert.equal(back.isError, undefined, textOf(back));
    assert.equal(endpoint.requests.length, requestsBefore + 1);
  });
});

describe('invoke_agent after the bind-mounted project was lazily unmounted', () => {
  const skip = namespaceSkip();
  let endpoint: SyntheticEndpoint;
  let source: string;
  let mountPoint: string;
  let server: RunningServer | undefined;

  before(async () => {
    if (skip !== undefined) return;
    source = makeProject(AGENTS, 'project-moved-source-');
    mountPoint = makeProject({}, 'project-moved-mount-');
    endpoint = await startSyntheticEndpoint();
    // The server runs in a private mount namespace where the project is a bind mount of `source`.
    const launcher = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$2" && shift 2 && exec "$@"', 'sh', source, mountPoint];
    server = await startServer(mountPoint, { env: providerEnv(endpoint.url), launcher });
  });

  after(async () => {
    await server?.close();
    await endpoint?.close();
    if (skip === undefined) {
      removeProject(source);
      removeProject(mountPoint);
    }
  });

  it('is refused once the mount is gone, so no reference to a vanishing journal is handed back', async (t) => {
    if (skip !== undefined) return t.skip(skip);
    const first = await server!.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
    assert.equal(first.isError, undefined, textOf(first));
    const requestsBefore = endpoint.requests.length;
    const unmounted = spawnSync('nsenter', ['-t', String(server!.pid()), '-m', 'umount', '-l', mountPoint], { encoding: 'utf8' });
    assert.equal(unmounted.status, 0, unmounted.stderr);
    const refused = await server!.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /the project moved: .* is now another directory/);
    assert.equal(endpoint.requests.length, requestsBefore, 'the provider was never called');
  });
});

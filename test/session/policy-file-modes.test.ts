import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer } from '../support/in-process-server.js';
import { type InvokeOutcome, providerEnv, textOf } from '../support/server.js';

// A policy file or folder that another local user could rewrite makes the
// whole set deny every response, as group- or world-writable storage does.
// Real files, chmod and chown; the session `symbi mcp` serves, in process
// (what is refused is the startup snapshot's decision), with the synthetic endpoint.

const ANOTHER_UID = 65534; // nobody
const PERMIT = 'permit(principal, action == Action::"respond", resource);\n';
const FORBID_SECRET = 'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n';

/** A project whose policy files and folders all start with sound modes (0644 files, 0755 folders), whatever the umask. */
function soundProject(): string {
  const dir = makeProject({
    'agents/assistant.symbi': 'agent assistant {}\n',
    'policies/permit.cedar': PERMIT,
    'policies/mcp-server/forbid.cedar': FORBID_SECRET,
  });
  for (const folder of ['policies', 'policies/mcp-server']) fs.chmodSync(path.join(dir, folder), 0o755);
  for (const file of ['policies/permit.cedar', 'policies/mcp-server/forbid.cedar']) fs.chmodSync(path.join(dir, file), 0o644);
  return dir;
}

describe('policy files and folders another user could rewrite', () => {
  let endpoint: SyntheticEndpoint;
  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
  });

  async function invoke(prepare: (dir: string) => void): Promise<InvokeOutcome> {
    const project = soundProject();
    prepare(project);
    const server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
    try {
      const sent = endpoint.requests.length;
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      return { text: textOf(result), isError: result.isError === true, stderr: server.stderr(), requests: endpoint.requests.length - sent };
    } finally {
      await server.close();
      removeProject(project);
    }
  }

  function assertDeniedNaming(outcome: InvokeOutcome, named: RegExp): void {
    assert.equal(outcome.isError, true, outcome.text);
    assert.match(outcome.text, /denies every response/);
    assert.match(outcome.text, named);
    assert.equal(outcome.requests, 0, 'refused before the provider was called');
    const line = outcome.stderr.split('\n').find((l) => l.includes('denies every response'));
    assert.ok(line, outcome.stderr);
    assert.match(line, named);
  }

  it('sound modes (0644 files, 0755 folders) load and answer', async () => {
    const outcome = await invoke(() => undefined);
    assert.equal(outcome.isError, false, outcome.text);
    assert.equal(outcome.text, 'Hello from the synthetic endpoint.');
  });

  it('a world-writable policy file (0666) denies all, naming the file and its mode', async () => {
    const outcome = await invoke((dir) => fs.chmodSync(path.join(dir, 'policies', 'permit.cedar'), 0o666));
    assertDeniedNaming(outcome, /policies\/permit\.cedar: is writable by group and others \(mode 0666\)/);
  });

  it('a group-writable forbid file (0664) denies all: the forbid could be emptied', async () => {
    const outcome = await invoke((dir) => fs.chmodSync(path.join(dir, 'policies', 'mcp-server', 'forbid.cedar'), 0o664));
    assertDeniedNaming(outcome, /policies\/mcp-server\/forbid\.cedar: is writable by its group \(mode 0664\)/);
  });

  it('a world-writable policies/ folder (0777) denies all', async () => {
    const outcome = await invoke((dir) => fs.chmodSync(path.join(dir, 'policies'), 0o777));
    assertDeniedNaming(outcome, /policies\/: is writable by group and others \(mode 0777\)/);
  });

  it('an others-writable policies/mcp-server/ folder with the sticky bit (1757) denies all', async () => {
    const outcome = await invoke((dir) => fs.chmodSync(path.join(dir, 'policies', 'mcp-server'), 0o1757));
    assertDeniedNaming(outcome, /policies\/mcp-server\/: is writable by others \(mode 1757\)/);
  });

  const notRoot = process.getuid?.() !== 0 ? 'skipped: chown to another user needs root' : false;

  it('a policy file owned by another user denies all', { skip: notRoot }, async () => {
    const outcome = await invoke((dir) => fs.chownSync(path.join(dir, 'policies', 'permit.cedar'), ANOTHER_UID, ANOTHER_UID));
    assertDeniedNaming(outcome, new RegExp(`policies/permit\\.cedar: is owned by uid ${ANOTHER_UID}, not by the server's uid`));
  });

  it('a policy folder owned by another user denies all', { skip: notRoot }, async () => {
    const outcome = await invoke((dir) => fs.chownSync(path.join(dir, 'policies', 'mcp-server'), ANOTHER_UID, ANOTHER_UID));
    assertDeniedNaming(outcome, new RegExp(`policies/mcp-server/: is owned by uid ${ANOTHER_UID}`));
  });
});

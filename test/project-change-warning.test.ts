import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from './support/synthetic-endpoint.js';
import { makeProject, removeProject } from './support/project.js';
import { providerEnv, startServer, textOf, waitForStderr } from './support/server.js';

// Edits after startup (issue 34, item 4): the snapshot rule stays (nothing changes until a
// restart), and the first change is said once on standard error, naming what changed.

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'AGENTS.md': '# Project\n',
  'policies/respond.cedar': 'permit (principal, action == Action::"respond", resource);\n',
};

describe('a project edited while the server runs', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(FILES);
  });
  after(async () => {
    await endpoint.close();
    removeProject(project);
  });

  it('says once that a policy file and an agent file changed and that a restart applies them; answers as at startup', async () => {
    const server = await startServer(project, { env: providerEnv(endpoint.url) });
    try {
      await waitForStderr(server, (s) => s.includes('startup.serving'));
      fs.appendFileSync(path.join(project, 'policies', 'respond.cedar'), 'forbid (principal, action, resource);\n');
      fs.writeFileSync(path.join(project, 'agents', 'helper.symbi'), 'agent helper {}\n');
      const stderr = await waitForStderr(server, (s) => s.includes('project.changed'), 30_000);
      const lines = stderr.split('\n').filter((l) => l.includes('project.changed'));
      assert.equal(lines.length, 1, stderr);
      assert.match(lines[0]!, /^\S+ symbi mcp: warn project\.changed: .*policies\/respond\.cedar/);
      assert.match(lines[0]!, /restart/);
      // The snapshot rule: the forbid appended after startup changes nothing until a restart.
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      assert.equal(result.isError, undefined, textOf(result));
      // One warning, however many changes follow.
      fs.appendFileSync(path.join(project, 'AGENTS.md'), 'more\n');
      await server.close();
      assert.equal(server.stderr().split('\n').filter((l) => l.includes('project.changed')).length, 1);
    } finally {
      await server.close();
    }
  });
});

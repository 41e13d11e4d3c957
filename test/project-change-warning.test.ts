import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { suiteFixture } from './support/suite-fixture.js';
import { providerEnv, startServer, textOf, waitForStderr } from './support/server.js';

// Edits after startup (issue 34, item 4): the snapshot rule stays (nothing changes until a
// restart), and the first change is said once on standard error, naming what changed.

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'AGENTS.md': '# Project\n',
  'policies/respond.cedar': 'permit (principal, action == Action::"respond", resource);\n',
};

describe('a project edited while the server runs', () => {
  const shared = suiteFixture(FILES);

  it('says once that a policy file and an agent file changed and that a restart applies them; answers as at startup', async () => {
    const server = await startServer(shared.project, { env: providerEnv(shared.endpoint.url) });
    try {
      await waitForStderr(server, (s) => s.includes('startup.serving'));
      fs.appendFileSync(path.join(shared.project, 'policies', 'respond.cedar'), 'forbid (principal, action, resource);\n');
      fs.writeFileSync(path.join(shared.project, 'agents', 'helper.symbi'), 'agent helper {}\n');
      const stderr = await waitForStderr(server, (s) => s.includes('project.changed'), 30_000);
      const lines = stderr.split('\n').filter((l) => l.includes('project.changed'));
      assert.equal(lines.length, 1, stderr);
      assert.match(lines[0]!, /^\S+ symbi mcp: warn project\.changed: .*policies\/respond\.cedar/);
      assert.match(lines[0]!, /restart/);
      // The snapshot rule: the forbid appended after startup changes nothing until a restart.
      const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'Say hello' });
      assert.equal(result.isError, undefined, textOf(result));
      // One warning, however many changes follow.
      fs.appendFileSync(path.join(shared.project, 'AGENTS.md'), 'more\n');
      await server.close();
      assert.equal(server.stderr().split('\n').filter((l) => l.includes('project.changed')).length, 1);
    } finally {
      await server.close();
    }
  });
});

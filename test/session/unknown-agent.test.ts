import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, removeProject } from '../support/project.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { providerEnv, textOf } from '../support/server.js';

// invoke_agent with a name no source has: the one-line refusal offers only the
// names it would run, and names the refused sources apart with their reason,
// the same reason list_agents gives. Served in process (test/support/in-process-server.ts).

const AGENTS = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'agents/helper.symbi': 'agent concierge {\n  capabilities = ["greet"]\n}\n',
  'agents/pipeline.symbi': 'agent pipeline {\n  with timeout = 30s {\n    let x = 1;\n  }\n}\n',
  'agents/dup.symbi': 'agent dup {}\n',
  'agents/dup.dsl': 'agent dup {}\n',
  'agents/broken.symbi': 'agent broken {\n  capabilities = [\n',
};

interface ListedAgent {
  stem: string;
  invocable: boolean;
  reason?: string;
}

async function refusalFor(server: InProcessServer, agent: string): Promise<string> {
  const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent, prompt: 'hello' } });
  assert.equal(result.isError, true);
  assert.equal(result.structuredContent, undefined, 'refused before any journal: no audit reference');
  const text = textOf(result);
  assert.ok(!/[\r\n]/.test(text), `one line: ${text}`);
  return text;
}

describe('invoke_agent with an unknown agent name', () => {
  let project: string;
  let server: InProcessServer;

  before(async () => {
    project = makeProject(AGENTS);
    // The endpoint is never reached: an unknown name is refused before the provider is looked at.
    server = await startInProcessServer(project, { env: providerEnv('http://127.0.0.1:9/v1') });
  });

  after(async () => {
    await server?.close();
    if (project) removeProject(project);
  });

  it('offers only invocable agents, and names each refused one once with its list_agents reason', async () => {
    const text = await refusalFor(server, 'nobody');
    const listed = (await server.client.callTool({ name: 'list_agents', arguments: {} })).structuredContent as { agents: ListedAgent[] };
    const reasonOf = (stem: string): string => listed.agents.find((a) => a.stem === stem)!.reason!;
    assert.equal(
      text,
      'invoke_agent refused: unknown agent `nobody`; invocable: assistant, helper; not invocable: ' +
        `broken (${reasonOf('broken')}), dup (${reasonOf('dup')}), pipeline (${reasonOf('pipeline')})`,
    );
    assert.match(reasonOf('pipeline'), /`with` block with statements/);
    assert.match(reasonOf('dup'), /ambiguous/);
  });

  it('escapes a hostile name and keeps the line', async () => {
    const text = await refusalFor(server, 'x\ny');
    assert.match(text, /^invoke_agent refused: unknown agent "x\\ny"; invocable: assistant, helper; /);
  });
});

describe('invoke_agent with an unknown name in a project where nothing can be invoked', () => {
  it('says none is invocable, and caps a long list of refused sources', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 8; i++) files[`agents/tool${i}.symbi`] = `agent tool${i}(x: Int) {}\n`;
    const project = makeProject(files);
    const server = await startInProcessServer(project, { env: providerEnv('http://127.0.0.1:9/v1') });
    try {
      const text = await refusalFor(server, 'nobody');
      assert.match(
        text,
        /^invoke_agent refused: unknown agent `nobody`; invocable: none; not invocable: tool0 \(.*has parameters.*\), .*tool4 \(.*\) and 3 more \(see list_agents\)$/,
      );
      assert.doesNotMatch(text, /tool5/);
    } finally {
      await server.close();
      removeProject(project);
    }
  });

  it('says no sources were registered when agents/ is empty', async () => {
    const project = makeProject({ 'README.txt': 'no agents here' });
    const server = await startInProcessServer(project, { env: providerEnv('http://127.0.0.1:9/v1') });
    try {
      assert.equal(await refusalFor(server, 'nobody'), 'invoke_agent refused: unknown agent `nobody`; no .symbi or .dsl files were registered at startup');
    } finally {
      await server.close();
      removeProject(project);
    }
  });
});

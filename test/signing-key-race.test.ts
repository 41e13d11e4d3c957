import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from './support/synthetic-endpoint.js';
import { makeProject, removeProject } from './support/project.js';
import { auditOf, providerEnv, type RunningServer, startServer, textOf } from './support/server.js';
import { projectPublicKey } from './support/journal.js';

// Two IDE windows, or two clients configured for one project, start servers at
// the same moment in a project that has no .symbiont/ yet. Each server that
// finds no key creates one; the key must appear whole or not at all, exactly
// one key must get the name, and every server must then sign with it. Before
// the key was written under a temporary name and linked into place, a server
// could read the file between its creation and its first byte and refuse
// invoke_agent for its whole life ("invalid signing key: is 0 bytes").
//
// SERVERS real `symbi mcp` processes per round, ROUNDS rounds, each in a fresh
// project. Every server answers one invoke_agent, and all report one public
// key: the one in the key file.

const SERVERS = 8;
const ROUNDS = 20;
const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

describe(`${SERVERS} servers started together in a project without .symbiont/`, () => {
  let endpoint: SyntheticEndpoint;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
  });

  it(`serve invoke_agent with one signing key, ${ROUNDS} rounds`, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const project = makeProject(FILES);
      const servers: RunningServer[] = [];
      try {
        const starting = Array.from({ length: SERVERS }, () => startServer(project, { env: providerEnv(endpoint.url) }));
        const settled = await Promise.allSettled(starting);
        for (const outcome of settled) if (outcome.status === 'fulfilled') servers.push(outcome.value);
        assert.equal(servers.length, SERVERS, `round ${round}: every server starts`);
        const results = await Promise.all(
          servers.map((server) => server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } })),
        );
        const keys = new Set<string>();
        for (const [index, result] of results.entries()) {
          assert.equal(result.isError, undefined, `round ${round}, server ${index + 1}: ${textOf(result)}\n${servers[index]!.stderr()}`);
          keys.add(auditOf(result).audit.public_key);
        }
        assert.deepEqual([...keys], [projectPublicKey(project)], `round ${round}: one public key, the key file's`);
        const governed = path.join(project, '.symbiont', 'governed');
        const leftovers = fs.readdirSync(governed).filter((name) => name.startsWith('audit-signing.key.'));
        assert.deepEqual(leftovers, [], `round ${round}: no temporary key file is left`);
        const key = fs.statSync(path.join(governed, 'audit-signing.key'));
        assert.equal(key.nlink, 1, 'the key file has one name');
        assert.equal(key.size, 32);
      } finally {
        await Promise.all(servers.map((server) => server.close()));
        removeProject(project);
      }
    }
  });
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { makeProject, removeProject } from '../support/project.js';
import { serverEnv } from '../support/server.js';
import { symbiBin } from '../support/server-entry.js';
import { waitFor } from '../support/wait-for.js';

// Started in the wrong folder (issue 34, item 3): `symbi mcp` with no --project in a folder
// without agents/ pins it, as the specification says, but creates nothing there, says which
// folder above is a project, and list_agents says why it is empty.

/** `symbi mcp` with no --project, started in `cwd`; its stderr once it has said it serves, and list_agents. */
async function startIn(cwd: string): Promise<{ stderr: string; note: unknown; agents: unknown[] }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [symbiBin, 'mcp'], cwd, env: serverEnv(), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'wrong-folder-test', version: '0' });
  await client.connect(transport);
  try {
    const list = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent as { agents: unknown[]; note?: unknown };
    await waitFor('the startup summary', () => (stderr.includes('startup.serving') ? true : undefined), 10_000);
    return { stderr, note: list.note, agents: list.agents };
  } finally {
    await client.close();
  }
}

describe('started in a folder that is not a project', () => {
  const roots: string[] = [];
  after(() => roots.forEach(removeProject));

  it("in a project's agents/ folder: names the project above, creates nothing, says why list_agents is empty", async () => {
    const root = fs.realpathSync(makeProject({ '.git/HEAD': 'ref: refs/heads/main\n', 'agents/assistant.symbi': 'agent assistant {}\n' }));
    roots.push(root);
    const folder = path.join(root, 'agents');
    const { stderr, note, agents } = await startIn(folder);
    assert.match(stderr, new RegExp(`no agents/ in ${folder}; the nearest project above is ${root}: start with --project ${root}`), stderr);
    assert.match(stderr, /no policy files: every response is permitted \(default permission\)/);
    assert.deepEqual(agents, []);
    assert.match(String(note), new RegExp(`no agents/ in ${folder}.*--project ${root}`));
    assert.deepEqual(fs.readdirSync(folder), ['assistant.symbi'], 'nothing created in the folder (no .symbiont/)');
  });

  it('with no project above (up to the repository root): says so, and creates nothing', async () => {
    const root = fs.realpathSync(makeProject({ '.git/HEAD': 'ref: refs/heads/main\n', 'notes/readme.txt': 'not a project\n' }));
    roots.push(root);
    const folder = path.join(root, 'notes');
    const { stderr, note } = await startIn(folder);
    assert.match(stderr, new RegExp(`no agents/ in ${folder}; no folder above it up to ${root} has one either`), stderr);
    assert.match(String(note), /no agents\//);
    assert.deepEqual(fs.readdirSync(folder), ['readme.txt'], 'nothing created in the folder');
  });
});

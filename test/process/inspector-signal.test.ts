import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { makeProject, removeProject } from '../support/project.js';
import { jsonLine, spawnInitializedServer, toolCallLine } from '../support/raw-stdio.js';
import { waitFor } from '../support/wait-for.js';

// Node.js opens its inspector on 127.0.0.1:9229 when the process gets
// SIGUSR1; any local user can then connect to it, read process.env (the
// provider key) and run code as the server. `symbi mcp` keeps the signal from
// doing that: SIGUSR1 to a real server must leave nothing listening and the
// server serving.

/** The TCP ports a process listens on (Linux: its socket inodes among the LISTEN rows of /proc/PID/net/tcp and tcp6). */
function listeningPorts(pid: number): number[] {
  const sockets = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined) sockets.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    let rows: string[];
    try {
      rows = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const row of rows) {
      const fields = row.trim().split(/\s+/);
      const [local, state, inode] = [fields[1], fields[3], fields[9]];
      // 0A is TCP_LISTEN (include/net/tcp_states.h).
      if (state === '0A' && inode !== undefined && sockets.has(inode)) ports.push(Number.parseInt(local!.split(':')[1]!, 16));
    }
  }
  return ports;
}

describe('SIGUSR1 does not open the inspector', { skip: process.platform === 'linux' ? false : 'reads /proc (Linux only)' }, () => {
  it('a server sent SIGUSR1 listens on no port, says nothing of a debugger, and keeps answering', async () => {
    const project = makeProject({ 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' });
    const server = spawnInitializedServer(project);
    try {
      await server.waitFor('init');
      await server.send(toolCallLine(1, 'list_agents', {}));
      await server.waitFor(1);
      server.kill('SIGUSR1');
      // The server says when it has handled the signal (without the listener no such line comes, and
      // the wait fails); a request answered after that line gives an inspector time to have opened.
      await waitFor('the signal.ignored line', () =>
        /SIGUSR1 ignored: this server never opens the Node\.js inspector/.test(server.stderr()) ? true : undefined,
      );
      await server.send(jsonLine({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_agents', arguments: {} } }));
      const answer = await server.waitFor(2);
      assert.ok('result' in answer, `list_agents after SIGUSR1: ${JSON.stringify(answer)}`);
      assert.deepEqual(listeningPorts(server.pid), []);
      assert.doesNotMatch(server.stderr(), /Debugger listening/);
      assert.equal(await server.end(), 0);
    } finally {
      server.kill('SIGKILL');
      removeProject(project);
    }
  });
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { makeProject, removeProject } from '../support/project.js';
import { startInProcessServer, type InProcessServer } from '../support/in-process-server.js';
import { auditOf, providerEnv, textOf } from '../support/server.js';
import { journalsIn } from '../support/journal.js';
import { waitFor } from '../support/wait-for.js';

// The key announced at startup is the only key a server signs with.
// Replacing, removing or exposing the key file afterwards makes invoke_agent
// refuse before inference (one line: what changed, and that a restart picks up
// a new key); putting the very same file back makes it serve again. Journals
// written before the change verify against the startup key. What the tool refuses and the
// operator log says is the session's logic: served in process (test/support/in-process-server.ts).

const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

describe('the signing key is pinned at startup', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let server: InProcessServer;
  let keyFile: string;
  let startupKey: string;
  const journals: { path: string; run_id: string }[] = [];

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject(FILES);
    server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
    keyFile = path.join(project, '.symbiont', 'governed', 'audit-signing.key');
    startupKey = /audit public key \(record it to verify journals\): ([0-9a-f]{64})/.exec(await stderrWith(/audit public key/))![1]!;
  });
  after(async () => {
    await server.close();
    await endpoint.close();
    removeProject(project);
  });

  function stderrWith(pattern: RegExp): Promise<string> {
    return waitFor(`stderr matching ${pattern}`, () => (pattern.test(server.stderr()) ? server.stderr() : undefined));
  }

  async function invoke(): Promise<unknown> {
    return server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
  }

  async function served(): Promise<void> {
    const result = await invoke();
    assert.equal((result as { isError?: boolean }).isError, undefined, textOf(result));
    const { audit } = auditOf(result);
    assert.equal(audit.public_key, startupKey);
    journals.push(audit);
  }

  async function refused(pattern: RegExp): Promise<string> {
    const requests = endpoint.requests.length;
    const journalCount = journalsIn(project).length;
    const result = await invoke();
    const text = textOf(result);
    assert.equal((result as { isError?: boolean }).isError, true, text);
    assert.match(text, pattern);
    assert.match(text, /restart the server to pick up a new key/);
    assert.ok(!text.includes('\n'), 'one line');
    assert.equal(endpoint.requests.length, requests, 'refused before inference: no provider request');
    assert.equal(journalsIn(project).length, journalCount, 'no journal');
    return text;
  }

  it('serves with the startup key', async () => {
    await served();
  });

  it('refuses once the key file is replaced by another valid key, and says so once on stderr', async () => {
    fs.renameSync(keyFile, `${keyFile}.startup`);
    fs.writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
    await refused(/audit-signing\.key was replaced by another file after startup/);
    await refused(/was replaced/);
    const warnings = server
      .stderr()
      .split('\n')
      .filter((l) => l.includes('audit signing key changed'));
    assert.equal(warnings.length, 1, warnings.join('\n'));
  });

  it('refuses once the key file is deleted, and never recreates it', async () => {
    fs.rmSync(keyFile);
    await refused(/audit-signing\.key was removed after startup/);
    assert.equal(fs.existsSync(keyFile), false, 'the deleted key was not recreated');
  });

  it('serves again when the very same file is put back', async () => {
    fs.renameSync(`${keyFile}.startup`, keyFile);
    await served();
  });

  it('refuses once the key file is readable by others (chmod 0644)', async () => {
    fs.chmodSync(keyFile, 0o644);
    await refused(/mode 0644 grants group or other access/);
    fs.chmodSync(keyFile, 0o600);
    await served();
  });

  it('refuses once the key file is rewritten in place with another key', async () => {
    const original = fs.readFileSync(keyFile);
    fs.writeFileSync(keyFile, randomBytes(32));
    await refused(/its content changed after startup/);
    fs.writeFileSync(keyFile, original);
    await served();
  });

  it('refuses once the key file is replaced by a symlink to the original', async () => {
    fs.renameSync(keyFile, `${keyFile}.startup`);
    fs.symlinkSync(`${keyFile}.startup`, keyFile);
    await refused(/is a symlink/);
    fs.rmSync(keyFile);
    fs.renameSync(`${keyFile}.startup`, keyFile);
  });

  it('every journal written verifies against the key announced at startup', () => {
    assert.equal(journals.length, 4);
    for (const audit of journals) {
      const { exitCode, report } = inspectJournal(audit.path, audit.run_id, startupKey, { crossCheck: true });
      assert.equal(exitCode, 0, JSON.stringify(report));
    }
  });
});

describe('no key at startup', () => {
  it('keeps serving and refuses every invocation with the startup reason when the storage was unusable at startup', async () => {
    const endpoint = await startSyntheticEndpoint();
    const project = makeProject(FILES);
    fs.mkdirSync(path.join(project, '.symbiont', 'governed'), { recursive: true, mode: 0o700 });
    fs.chmodSync(path.join(project, '.symbiont', 'governed'), 0o770);
    const server = await startInProcessServer(project, { env: providerEnv(endpoint.url) });
    try {
      // Past the moment the worker pool would have been warmed up: the warm-up runs at the handshake,
      // before the startup summary's last line.
      await waitFor('the serving line', () => (server.stderr().includes('serving MCP on standard input/output') ? true : undefined));
      for (let i = 0; i < 2; i += 1) {
        const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
        assert.equal((result as { isError?: boolean }).isError, true);
        assert.match(textOf(result), /audit storage was unusable at startup: .*governed: unsafe storage: mode 0770/);
      }
      assert.equal(endpoint.requests.length, 0);
      assert.equal(fs.existsSync(path.join(project, '.symbiont', 'governed', 'audit-signing.key')), false);
    } finally {
      await server.close();
      await endpoint.close();
      removeProject(project);
    }
  });
});

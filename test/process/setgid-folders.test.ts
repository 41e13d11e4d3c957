import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject, tempDir } from '../support/project.js';
import { auditOf, providerEnv, startServer, textOf } from '../support/server.js';
import { inspect, projectPublicKey } from '../support/journal.js';

// A directory made inside a setgid folder inherits S_ISGID (mkdir(2)). Teams
// share folders that way, and some put TMPDIR in one. The bit grants nobody
// access, so wherever a mode is checked (the route self-test's scratch
// directory under TMPDIR, .symbiont/, .symbiont/governed/, the key file, the
// journals) it is no wrong mode: before, "mode 2700, expected 0700" refused
// every route, and the server served no file.

const S_ISGID = 0o2000;
const FILES = { 'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n' };

describe('setgid folders: a setgid TMPDIR and a setgid project', () => {
  let endpoint: SyntheticEndpoint;
  let tmp: string;
  let project: string;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    tmp = tempDir('symbi-setgid-tmp-');
    fs.chmodSync(tmp, 0o2700);
    project = makeProject(FILES);
    fs.chmodSync(project, 0o2755);
  });
  after(async () => {
    await endpoint.close();
    removeProject(project);
    removeProject(tmp);
  });

  it('are real setgid directories', () => {
    assert.equal(fs.statSync(tmp).mode & S_ISGID, S_ISGID);
    assert.equal(fs.statSync(project).mode & S_ISGID, S_ISGID);
  });

  for (const start of ['first start (creates .symbiont/ and the key)', 'second start (reads them back)']) {
    it(`${start}: serves project files and invoke_agent`, async () => {
      // A fresh cache folder, so nothing remembered from another start stands in for this one's checks.
      const cache = tempDir('symbi-setgid-cache-');
      const server = await startServer(project, { env: providerEnv(endpoint.url, { TMPDIR: tmp, XDG_CACHE_HOME: cache }) });
      try {
        const file = await server.call('get_agent_dsl', { agent: 'assistant' });
        assert.equal(file.isError, undefined, `${textOf(file)}\n${server.stderr()}`);
        assert.match(textOf(file), /capabilities = \["answer"\]/);
        assert.doesNotMatch(server.stderr(), /unavailable|self-test:|unsafe/, server.stderr());
        const result = await server.call('invoke_agent', { agent: 'assistant', prompt: 'hello' });
        assert.equal(result.isError, undefined, `${textOf(result)}\n${server.stderr()}`);
        const { audit } = auditOf(result);
        assert.equal(audit.public_key, projectPublicKey(project));
        assert.equal(inspect(audit.path, audit.run_id, audit.public_key).status, 0);
      } finally {
        await server.close();
        removeProject(cache);
      }
      // The storage the server made did inherit the bit, so the checks above met it.
      for (const dir of ['.symbiont', '.symbiont/governed']) {
        const mode = fs.statSync(path.join(project, dir)).mode & 0o7777;
        assert.equal(mode, 0o2700, `${dir} has mode ${mode.toString(8)}`);
      }
    });
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { compiledCedarModule } from '../../src/shared/policy/cedar-engine.js';
import { loadPolicySet } from '../../src/shared/policy/policy-set.js';
import { repoRoot as repo } from '../support/server-entry.js';

// Cedar's wasm is compiled once, in the supervisor; a worker thread decides with the module it
// receives and never compiles one itself (cedar-engine.ts). Runs the built code (npm run build).

const dist = (p: string) => pathToFileURL(path.join(repo, 'dist', 'shared', p)).href;

test('a worker thread decides with the Cedar module compiled in the parent, without compiling one', async () => {
  const policyPath = path.join(repo, 'examples', 'quickstart', 'policies', 'mcp-server', 'respond.cedar');
  const set = loadPolicySet([{ path: 'policies/mcp-server/respond.cedar', text: fs.readFileSync(policyPath, 'utf8') }]);
  assert.equal(set.mode, 'configured');
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    const { createHash } = require('node:crypto');
    // Any compile in this thread now fails loudly.
    WebAssembly.Module = new Proxy(WebAssembly.Module, { construct() { throw new Error('this thread compiled a wasm module'); } });
    WebAssembly.compile = async () => { throw new Error('this thread compiled a wasm module'); };
    (async () => {
      const { useCompiledCedar } = await import(${JSON.stringify(dist('policy/cedar-engine.js'))});
      const { authorizeRespond } = await import(${JSON.stringify(dist('policy/respond-authorization.js'))});
      const { respondRequestFor } = await import(${JSON.stringify(dist('policy/respond-request.js'))});
      useCompiledCedar(workerData.module);
      const agent = { principal: '3f1c9d2e-8a4b-5c6d-9e0f-1a2b3c4d5e6f', declaredName: 'assistant', file: 'agents/assistant.symbi', sourceHash: 'a'.repeat(64), declarationHash: 'b'.repeat(64), capabilities: ['answer'] };
      const decide = (content) => authorizeRespond(workerData.set, respondRequestFor(agent, 'd9428888-122b-41d6-a7a0-5c1f1a2b3c4d', {
        content, sha256: createHash('sha256').update(content).digest('hex'), bytes: Buffer.byteLength(content), finish_reason: 'complete', provider_finish_reason: 'stop',
      }));
      parentPort.postMessage({ plain: decide('An ordinary answer.'), secret: decide('the secret is out') });
    })().catch((err) => parentPort.postMessage({ error: String(err) }));`;
  const worker = new Worker(code, { eval: true, workerData: { module: compiledCedarModule(), set } });
  const result = await new Promise<{ plain?: { decision: string }; secret?: { decision: string; reason: string }; error?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(result.error, undefined);
  assert.equal(result.plain?.decision, 'allow');
  assert.equal(result.secret?.decision, 'deny');
});

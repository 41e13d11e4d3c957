import { providerConfigFor } from '../../src/shared/provider/provider-config.js';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { sha256Hex } from '../../src/shared/canonical-json.js';
import { closeAuditStorage, openAuditStorage } from '../../src/shared/storage/audit-storage.js';
import type { PinnedSigningKey } from '../../src/shared/storage/signing-key-store.js';
import { PinnedDirectory, pinProject } from '../../src/shared/confinement/index.js';
import { loadPolicySet } from '../../src/shared/policy/policy-set.js';
import type { RunDefinition } from '../../src/shared/worker-protocol.js';
import { finaliseUnstartedRun } from '../../src/supervisor/runs/unstarted-run-finaliser.js';
import { performInvocation } from '../../src/worker/invocation.js';
import type { WorkerResources } from '../../src/worker/worker-resources.js';
import { makeProject, removeProject } from '../support/project.js';
import { eventNames, inspect, projectPublicKey, readJournal } from '../support/journal.js';
import { ROUTE_SEQUENCES } from '../support/symbiont-route.js';

// A run cancelled before its worker started it is finalised by its owner.
// Creating the journal is the claim; these tests put the owner and the worker
// code (the real writer, the real files) in each order and check that exactly
// one of them writes the run's records.

const SOURCE = 'agent assistant {\n  capabilities = ["answer"]\n}\n';
const CANCEL = 'the caller cancelled the invocation';

function definition(): RunDefinition {
  return {
    stem: 'assistant',
    file: 'agents/assistant.symbi',
    declaredName: 'assistant',
    principal: responsePrincipal('assistant'),
    sourceHash: sha256Hex(SOURCE),
    declarationText: SOURCE.trim(),
    declarationHash: sha256Hex(SOURCE.trim()),
    capabilities: ['answer'],
    timeoutMs: 30_000,
  };
}

describe('the owner claim for runs cancelled before their worker starts', () => {
  let endpoint: SyntheticEndpoint;
  let project: string;
  let pinned: PinnedDirectory;
  let resources: WorkerResources;
  let pinnedKey: PinnedSigningKey;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    project = makeProject({ 'agents/assistant.symbi': SOURCE });
    pinned = pinProject(project);
    // As at server startup: the key is loaded once and both sides sign with it.
    const storage = openAuditStorage(pinned);
    pinnedKey = storage.pinnedKey;
    closeAuditStorage(storage);
    resources = {
      project: pinned,
      policySet: loadPolicySet([]),
      provider: providerConfigFor({ kind: 'openai', baseUrl: endpoint.url, model: 'synthetic', apiKey: 'claim-test' }),
      signingKey: pinnedKey.key,
      signingKeyFile: pinnedKey,
    };
  });

  after(async () => {
    endpoint.releaseAll();
    await endpoint.close();
    fs.closeSync(pinned.fd);
    removeProject(project);
  });

  it('the owner claims first: it writes Started and Terminated, and the worker then writes nothing and sends nothing', async () => {
    const runId = randomUUID();
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    const requestsBefore = endpoint.requests.length;
    try {
      ownerPort.postMessage({ type: 'cancel', reason: CANCEL });
      const claim = await finaliseUnstartedRun(pinned, pinnedKey, runId, definition(), CANCEL);
      assert.equal(claim.claimed, true);
      assert.ok(claim.claimed && claim.finalised !== undefined, 'the claimed run is finalised');
      const journal = claim.finalised.audit.path;
      const written = fs.readFileSync(journal);

      const outcome = await performInvocation(
        { runId, definition: definition(), prompt: 'hello', reportProgress: false, port: workerPort, handover: new SharedArrayBuffer(4) },
        resources,
      );
      assert.equal(outcome.ok, false);
      assert.ok(!outcome.ok && outcome.cancelled && !outcome.terminalDurable, 'the worker reports the cancel and writes no terminal record');
      assert.equal(outcome.message, CANCEL);
      assert.deepEqual(fs.readFileSync(journal), written, 'the journal is byte-for-byte what the owner wrote');
      assert.equal(endpoint.requests.length, requestsBefore, 'no provider request was sent');

      const records = readJournal(journal);
      assert.deepEqual(eventNames(records), [...ROUTE_SEQUENCES.cancelledBeforeCall]);
      assert.deepEqual((records[3]!.payload.entry.event.Terminated as { reason: unknown }).reason, { Error: { message: CANCEL } });
      assert.equal(inspect(journal, runId, projectPublicKey(project)).status, 0);
    } finally {
      ownerPort.close();
      workerPort.close();
    }
  });

  it('the worker creates the journal first: the owner claim fails and the worker finishes the run', async () => {
    const runId = randomUUID();
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    try {
      const running = performInvocation(
        { runId, definition: definition(), prompt: 'wait [[hold]]', reportProgress: false, port: workerPort, handover: new SharedArrayBuffer(4) },
        resources,
      );
      const journal = path.join(project, '.symbiont', 'governed', `${responsePrincipal('assistant')}.${runId}.jsonl`);
      // The request is on its way once the endpoint holds it.
      for (let i = 0; i < 500 && !endpoint.requests.some((r) => r.rawBody.includes('wait [[hold]]') && !r.answered && !r.closedEarly); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.deepEqual(eventNames(readJournal(journal)), ROUTE_SEQUENCES.cancelledDuringCall.slice(0, 4));

      ownerPort.postMessage({ type: 'cancel', reason: CANCEL });
      const claim = await finaliseUnstartedRun(pinned, pinnedKey, runId, definition(), CANCEL);
      assert.deepEqual(claim, { claimed: false });

      const outcome = await running;
      assert.ok(!outcome.ok && outcome.cancelled && outcome.terminalDurable, 'the worker writes the terminal record');
      assert.deepEqual(eventNames(readJournal(journal)), [...ROUTE_SEQUENCES.cancelledDuringCall]);
      // Complete; the cancelled request is an unknown effect, so it needs reconciliation.
      assert.equal(inspect(journal, runId, projectPublicKey(project)).status, 2);
    } finally {
      ownerPort.close();
      workerPort.close();
    }
  });
  it('with .symbiont/governed swapped for a directory holding another key, the run refuses and writes no journal in either', async () => {
    const runId = randomUUID();
    const governed = path.join(project, '.symbiont', 'governed');
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    const requestsBefore = endpoint.requests.length;
    fs.renameSync(governed, `${governed}.startup`);
    try {
      fs.mkdirSync(governed, { mode: 0o700 });
      fs.writeFileSync(path.join(governed, 'audit-signing.key'), randomBytes(32), { mode: 0o600 });
      const outcome = await performInvocation(
        { runId, definition: definition(), prompt: 'hello', reportProgress: false, port: workerPort, handover: new SharedArrayBuffer(4) },
        resources,
      );
      assert.ok(!outcome.ok && outcome.audit === undefined, JSON.stringify(outcome));
      assert.match(outcome.message, /audit-signing\.key was replaced by another file after startup/);
      for (const dir of [governed, `${governed}.startup`])
        assert.equal(fs.existsSync(path.join(dir, `${responsePrincipal('assistant')}.${runId}.jsonl`)), false, `no journal in ${dir}`);
      assert.equal(endpoint.requests.length, requestsBefore, 'no provider request was sent');
    } finally {
      ownerPort.close();
      workerPort.close();
      fs.rmSync(governed, { recursive: true, force: true });
      fs.renameSync(`${governed}.startup`, governed);
    }
  });

  it('with .symbiont removed after startup, the run refuses without making the storage again, and sends nothing', async () => {
    const storage = path.join(project, '.symbiont');
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    const requestsBefore = endpoint.requests.length;
    fs.renameSync(storage, `${storage}.startup`);
    try {
      const outcome = await performInvocation(
        { runId: randomUUID(), definition: definition(), prompt: 'hello', reportProgress: false, port: workerPort, handover: new SharedArrayBuffer(4) },
        resources,
      );
      assert.ok(!outcome.ok && outcome.audit === undefined, JSON.stringify(outcome));
      assert.match(outcome.message, /\.symbiont: the storage directory was removed after startup; restart the server to create it again/);
      assert.equal(fs.existsSync(storage), false, 'the storage is not made again by a run');
      assert.equal(endpoint.requests.length, requestsBefore, 'no provider request was sent');
    } finally {
      ownerPort.close();
      workerPort.close();
      fs.renameSync(`${storage}.startup`, storage);
    }
  });

  it('with the key file replaced after startup, the owner claims nothing and the worker refuses before any journal or request', async () => {
    const runId = randomUUID();
    const keyPath = path.join(project, '.symbiont', 'governed', 'audit-signing.key');
    const journal = path.join(project, '.symbiont', 'governed', `${responsePrincipal('assistant')}.${runId}.jsonl`);
    const { port1: ownerPort, port2: workerPort } = new MessageChannel();
    const requestsBefore = endpoint.requests.length;
    // The startup file is moved aside (keeping its inode for the tests after this one) and another key takes its place.
    fs.renameSync(keyPath, `${keyPath}.startup`);
    try {
      fs.writeFileSync(keyPath, randomBytes(32), { mode: 0o600 });
      ownerPort.postMessage({ type: 'cancel', reason: CANCEL });
      assert.deepEqual(await finaliseUnstartedRun(pinned, pinnedKey, runId, definition(), CANCEL), { claimed: false });
      const outcome = await performInvocation(
        { runId, definition: definition(), prompt: 'hello', reportProgress: false, port: workerPort, handover: new SharedArrayBuffer(4) },
        resources,
      );
      assert.ok(!outcome.ok && !outcome.terminalDurable && outcome.audit === undefined, JSON.stringify(outcome));
      assert.match(outcome.message, /audit-signing\.key was replaced by another file after startup; .*restart the server to pick up a new key/);
      assert.equal(outcome.keyFileChange, outcome.message);
      assert.equal(fs.existsSync(journal), false, 'no journal was created');
      assert.equal(endpoint.requests.length, requestsBefore, 'no provider request was sent');
    } finally {
      ownerPort.close();
      workerPort.close();
      fs.rmSync(keyPath, { force: true });
      fs.renameSync(`${keyPath}.startup`, keyPath);
    }
  });
});

// The V8 abort behind issue 12, reproduced with Cedar itself: TurboFan inlines the call from
// the package's `isAuthorized` glue into its wasm export (externref in, externref out); a lazy
// deopt of that glue while the wasm runs makes V8 before 13.6 rebuild the result by its Wasm
// type and reach UNREACHABLE (SIGTRAP). Here the lazy deopt is forced from a getter Cedar reads
// on the request, in a child process started with --allow-natives-syntax; in a server the same
// deopt comes from whatever invalidates the optimised code during a decision, after thousands
// of calls. See src/shared/policy/wasm-call-inlining.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { jsToWasmInliningIsUnsafe } from '../../src/shared/policy/wasm-call-inlining.js';
import { repoRoot as repo } from '../support/server-entry.js';

// The suite builds dist/ first; the worker thread loads Cedar the way the server's workers do.
const engineUrl = pathToFileURL(path.join(repo, 'dist', 'shared', 'policy', 'cedar-engine.js')).href;
const cedarPackage = path.join(repo, 'node_modules', '@cedar-policy', 'cedar-wasm', 'nodejs');

/** Worker-thread code (CommonJS, natives syntax on): one Cedar decision lazily deoptimised mid-call. */
function scenario(loadCedar: string): string {
  return `
const { parentPort } = require('node:worker_threads');
${loadCedar}.then((cedar) => {
  const decide = cedar.isAuthorized;
  let deoptimiseNow = false;
  const call = {
    principal: { type: 'Agent', id: 'a' }, action: { type: 'Action', id: 'respond' }, resource: { type: 'Resource', id: 'default' },
    policies: { staticPolicies: 'permit(principal, action, resource);' }, entities: [],
  };
  Object.defineProperty(call, 'context', { enumerable: true, get() {
    if (deoptimiseNow) { deoptimiseNow = false; %DeoptimizeFunction(decide); }
    return {};
  } });
  %PrepareFunctionForOptimization(decide);
  decide(call); decide(call);
  %OptimizeFunctionOnNextCall(decide);
  decide(call);
  deoptimiseNow = true;
  parentPort.postMessage(decide(call).response.decision);
});`;
}

function runInWorker(loadCedar: string): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const main = `
const { Worker } = require('node:worker_threads');
const worker = new Worker(${JSON.stringify(scenario(loadCedar))}, { eval: true });
worker.on('message', (decision) => console.log('decision ' + decision));
worker.on('error', (error) => { console.error(error); process.exitCode = 1; });`;
  const child = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', main], { encoding: 'utf8', timeout: 60_000 });
  return { status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr };
}

describe('lazy deopt of an inlined call into Cedar on a worker thread', () => {
  it('returns the decision when Cedar is loaded through cedar-engine.ts', () => {
    const run = runInWorker(`import(${JSON.stringify(engineUrl)}).then(({ cedar }) => cedar)`);
    assert.equal(run.signal, null, `the process was killed by ${run.signal}: ${run.stderr.slice(0, 300)}`);
    assert.equal(run.status, 0, run.stderr.slice(0, 500));
    assert.match(run.stdout, /^decision allow$/m);
  });

  it(
    'aborts this Node line without the guard only where the guard is on',
    { skip: process.platform !== 'linux' && 'signal names checked on Linux only' },
    () => {
      const run = runInWorker(`Promise.resolve(require(${JSON.stringify(cedarPackage)}))`);
      const aborted = run.signal === 'SIGTRAP';
      if (aborted) {
        assert.match(run.stderr, /unreachable code/);
        assert.ok(jsToWasmInliningIsUnsafe(), `V8 ${process.versions.v8} aborts, but the guard does not consider it affected`);
      } else {
        assert.equal(run.status, 0, run.stderr.slice(0, 500));
        assert.match(run.stdout, /^decision allow$/m);
      }
      // The lines this project saw abort: keep the reproduction honest there.
      if (/^v(20|22)\./.test(process.version)) assert.ok(aborted, `expected the V8 abort on ${process.version}`);
    },
  );

  it('reads the V8 version the way process.versions.v8 spells it', () => {
    assert.equal(jsToWasmInliningIsUnsafe('11.3.244.8-node.38'), true);
    assert.equal(jsToWasmInliningIsUnsafe('12.4.254.21-node.57'), true);
    assert.equal(jsToWasmInliningIsUnsafe('13.5.0.0'), true);
    assert.equal(jsToWasmInliningIsUnsafe('13.6.233.17-node.63'), false);
    assert.equal(jsToWasmInliningIsUnsafe('14.0.1'), false);
  });
});

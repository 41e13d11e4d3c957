import { parentPort, threadId, workerData } from 'node:worker_threads';
import { signingKeyFromSeed } from '../shared/signing/signing-key.js';
import { PinnedDirectory } from '../shared/confinement/index.js';
import { useCompiledCedar } from '../shared/policy/cedar-engine.js';
import { preparePolicySet } from '../shared/policy/respond-authorization.js';
import {
  WORKER_BOOTED_MESSAGE,
  type WorkerBootedMessage,
  type InvokeOutcome,
  type InvokeTask,
  type SandboxedThreadData,
  type WorkerBootData,
} from '../shared/worker-protocol.js';
import { performInvocation } from './invocation.js';
import { TEST_SWITCHES_HONOURED } from '../shared/test-switches.js';
import type { WorkerResources } from './worker-resources.js';
import { reserveNextJournalFile } from './journal-reserve.js';

// The piscina task module. Worker threads share the process's descriptor table,
// so the project directory pinned by the supervisor is used here by number.
// What a worker holds is exactly its boot data (worker-protocol.ts): the pinned
// directory, the policy set, the provider configuration and the startup key;
// its process.env is empty and its standard output is not the MCP channel
// (the thread sandbox, supervisor/threads/sandboxed-thread.ts).
const boot = (workerData as SandboxedThreadData<WorkerBootData>).task;
const resources: WorkerResources = {
  project: PinnedDirectory.fromDescriptor(boot.projectFd, boot.projectPath, boot.confinementRoute),
  policySet: boot.policySet,
  provider: boot.provider,
  signingKey: signingKeyFromSeed(boot.signingKeySeed),
  signingKeyFile: boot.signingKeyFile,
};
// The KeyObject keeps its own copy; this thread's copy of the seed is not needed again.
boot.signingKeySeed.fill(0);

if (boot.cedarModule !== undefined) useCompiledCedar(boot.cedarModule);
preparePolicySet(resources.policySet);

// A run alone on this thread syncs its journal here; with others in flight, on libuv's pool,
// where their syncs overlap (journal-writer.ts, writeRecords).
let runsInFlight = 0;
resources.journalSyncInThread = () => runsInFlight === 1;

// Test-only fault injection is a module of its own, loaded only when the operator set
// SYMBI_FAULT_INJECTION (handed over in the boot data), so a production worker never evaluates it;
// the shipped bundle does not hold it at all (test-switches.ts).
const faults = boot.faultInjection === undefined || !TEST_SWITCHES_HONOURED ? undefined : await import('./fault-injection.js');
faults?.whileLoading(boot.faultInjection);
const faultHooks = faults?.faultHooks;
// The supervisor trims the C allocator once a thread is up (heap-footprint.ts).
parentPort?.postMessage({ type: WORKER_BOOTED_MESSAGE, threadId } satisfies WorkerBootedMessage);

export default async function invokeTask(task: InvokeTask): Promise<InvokeOutcome> {
  runsInFlight += 1;
  try {
    return await performInvocation(task, resources, faultHooks?.(boot.faultInjection, task.prompt, { apiKey: boot.provider.apiKey, handover: task.handover }));
  } finally {
    runsInFlight -= 1;
    task.port.close();
    // After the result is on its way: the next run's journal file (journal-reserve.ts).
    setImmediate(reserveNextJournalFile, resources);
  }
}

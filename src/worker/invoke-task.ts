import { workerData } from 'piscina';
import { PinnedDirectory } from '../shared/pinned-directory.js';
import { preparePolicySet } from '../shared/policy/respond-authorization.js';
import type { InvokeOutcome, InvokeTask, WorkerBootData } from '../shared/run-messages.js';
import { faultHook } from './fault-injection.js';
import { performInvocation, type WorkerResources } from './invocation.js';

// The piscina task module. Worker threads share the process's descriptor table,
// so the project directory pinned by the supervisor is used here by number.
const boot = workerData as WorkerBootData;
const resources: WorkerResources = {
  project: PinnedDirectory.fromDescriptor(boot.projectFd, boot.projectPath),
  policySet: boot.policySet,
  provider: boot.provider,
};

preparePolicySet(resources.policySet);

export default async function invokeTask(task: InvokeTask): Promise<InvokeOutcome> {
  try {
    return await performInvocation(task, resources, faultHook(task.prompt));
  } finally {
    task.port.close();
  }
}

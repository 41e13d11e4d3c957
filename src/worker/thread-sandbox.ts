import { workerData } from 'node:worker_threads';
import type { SandboxedThreadData } from '../shared/worker-protocol.js';
import { takeStandardOutput } from './worker-stdout.js';

// The first module of every worker thread the server starts: the thread factory
// (supervisor/threads/sandboxed-thread.ts) loads it with `--import`, ahead of the
// thread's task module and of any library preloaded on node's command line, so
// standard output is taken off the MCP channel before any other code of the
// thread runs.

takeStandardOutput((workerData as SandboxedThreadData<unknown>).sandbox.redact);

// The module each kind of worker thread starts with, named from the build root: src/ under tsx,
// dist/ after `npm run build` (tsc, then each thread's entry bundled into one file over tsc's),
// bundle/ in the package. This file sits one folder below that root in all three (esbuild puts it
// in an entry of bundle/<folder>/ or in bundle/chunks/), so the supervisor's folders can change
// without changing where a thread's module is found.
const BUILD_ROOT = new URL('../', import.meta.url);

/** Every thread's first module: it takes standard output over before anything else runs. */
export const THREAD_SANDBOX_MODULE = new URL('worker/thread-sandbox.js', BUILD_ROOT);
/** The invocation pool's task (invoke_agent runs). */
export const INVOKE_TASK_MODULE = new URL('worker/invoke-task.js', BUILD_ROOT);
/** The DSL analysis thread's task. */
export const DSL_ANALYSIS_TASK_MODULE = new URL('worker/dsl-analysis-task.js', BUILD_ROOT);
/**
 * The command line of this build, for a child process that must run the same build (route-proof.ts):
 * dist/'s honours the test-only settings and the bundle's refuses them (test-switches.ts). Under tsx
 * there is no such JavaScript file; the child then runs bin/symbi.js.
 */
export const BUILD_CLI_MODULE = new URL('supervisor/cli.js', BUILD_ROOT);

// Where both routes start the demo: `symbi demo` (demo-command.ts) and `npm run demo` (scripts/demo.mjs
// runs this file through tsx). The options decide between the walk-through (demo-run.ts) and the local
// model endpoint alone (demo-endpoint.ts); a machine that cannot run either gets one line and exit 1.

import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { runDemoEndpoint } from './demo-endpoint.js';
import { DemoSetupError, parseDemoArgs, runDemo, type DemoStart } from './demo-run.js';

/** Runs the demo the words ask for; resolves with the exit status (2: a usage problem). */
export async function startDemo(words: readonly string[], start: Omit<DemoStart, 'keep'>, prefix: string): Promise<number> {
  const options = parseDemoArgs(words);
  if ('problem' in options) {
    process.stderr.write(`${prefix}: ${options.problem}\n`);
    return 2;
  }
  try {
    return options.endpoint !== undefined ? await runDemoEndpoint(start.origin, options.endpoint.port) : await runDemo({ ...start, keep: options.keep });
  } catch (error) {
    // The machine cannot run the demo: one line naming the cause and the fix, never a stack trace.
    if (!(error instanceof DemoSetupError)) throw error;
    process.stderr.write(`${prefix}: ${error.message}\n`);
    return 1;
  }
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(fs.realpathSync(entry)).href;
  } catch {
    return false;
  }
}

// Run directly (scripts/demo.mjs starts this file through tsx): the clone route.
if (isMainModule()) {
  // npm runs scripts from the package root; INIT_CWD is where the person typed `npm run demo`.
  const cwd = process.env.INIT_CWD ?? process.cwd();
  startDemo(process.argv.slice(2), { origin: 'clone', npmScript: true, cwd }, 'demo').then(
    (status) => {
      process.exitCode = status;
    },
    (error: unknown) => {
      process.stderr.write(`demo: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

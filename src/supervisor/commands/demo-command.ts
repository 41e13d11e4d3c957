import type { Command } from 'commander';

// `symbi demo`: the walk-through of `npm run demo`, run from an installed
// package (`npx -y symbi-mcp demo`), so a person can try the server without a
// clone, or from a clone's bin/symbi.js. The driver and its synthetic endpoint
// (src/demo/) are loaded only for this command.

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('Walk through the server against a local synthetic model (no network, no key) and verify every journal')
    .option('--keep', 'keep the copy of the example the demo serves, and print the symbi audit commands for its journals')
    // Anything else reaches the action, which refuses it in the demo's own words (the npm route shares them).
    .allowUnknownOption()
    .allowExcessArguments()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async (flags: { keep?: boolean }, command: Command) => {
      const { runDemo, parseDemoArgs, thisCopyOrigin, DemoSetupError } = await import('../../demo/demo-run.js');
      const leftover = parseDemoArgs(command.args);
      if ('problem' in leftover) {
        process.stderr.write(`symbi demo: ${leftover.problem}\n`);
        process.exitCode = 2;
        return;
      }
      try {
        process.exitCode = await runDemo({ origin: thisCopyOrigin(), npmScript: false, cwd: process.cwd(), keep: flags.keep === true });
      } catch (error) {
        // The machine cannot run the demo: one line naming the cause and the fix, never a stack trace.
        if (!(error instanceof DemoSetupError)) throw error;
        process.stderr.write(`symbi demo: ${error.message}\n`);
        process.exitCode = 1;
      }
    });
}

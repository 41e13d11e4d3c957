import type { Command } from 'commander';

// `symbi demo`: the walk-through of `npm run demo`, run from an installed
// package (`npx -y symbi-mcp demo`), so a person can try the server without a
// clone. The driver and its synthetic endpoint (src/demo/) are loaded only for
// this command.

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('Walk through the server against a local synthetic model (no network, no key) and verify every journal')
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async () => {
      const { runDemo, DemoSetupError } = await import('../../demo/demo-run.js');
      try {
        process.exitCode = await runDemo('package');
      } catch (error) {
        // The machine cannot run the demo: one line naming the cause and the fix, never a stack trace.
        if (!(error instanceof DemoSetupError)) throw error;
        process.stderr.write(`symbi demo: ${error.message}\n`);
        process.exitCode = 1;
      }
    });
}

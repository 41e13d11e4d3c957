import type { Command } from 'commander';

// `symbi demo`: the walk-through of `npm run demo`, run from an installed package or from a clone's
// bin/symbi.js, so a person can try the server without a clone; `symbi demo --endpoint` starts only its
// local model endpoint, for trying invoke_agent from a real MCP client before having a key. The demo
// (src/demo/) is loaded only for this command.

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('Walk through the server against a local synthetic model (no network, no key) and verify every journal')
    .option('--keep', 'keep the copy of the example the demo serves, and print the symbi audit commands for its journals')
    .option('--endpoint', 'start only the local synthetic model on 127.0.0.1 and print the lines for an MCP client, until Ctrl-C')
    .option('--port <N>', 'the port --endpoint listens on (default 8642)')
    // Commander only lists the options: the demo reads them itself, in the same words on both routes
    // (the npm route shares them), so they are handed back as words. Anything else reaches it too.
    .allowUnknownOption()
    .allowExcessArguments()
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async (flags: { keep?: boolean; endpoint?: boolean; port?: string }, command: Command) => {
      const words = [
        ...(flags.keep === true ? ['--keep'] : []),
        ...(flags.endpoint === true ? ['--endpoint'] : []),
        ...(flags.port !== undefined ? ['--port', flags.port] : []),
        ...command.args,
      ];
      const { startDemo } = await import('../../demo/demo-main.js');
      const { thisCopyOrigin } = await import('../../demo/demo-run.js');
      process.exitCode = await startDemo(words, { origin: thisCopyOrigin(), npmScript: false, cwd: process.cwd() }, 'symbi demo');
    });
}

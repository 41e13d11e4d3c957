import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

// `symbi demo`: the walk-through of `npm run demo`, run from an installed
// package (`npx -y symbi-mcp demo`), so a person can try the server without a
// clone. The driver and its synthetic endpoint are compiled into
// dist/scripts/ by tsconfig.demo.json; they are loaded only for this command.

type RunDemo = (origin: 'clone' | 'package') => Promise<number>;

const driverUrl = new URL('../../scripts/demo-run.js', import.meta.url);

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('Walk through the server against a local synthetic model (no network, no key) and verify every journal')
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async () => {
      if (!existsSync(driverUrl)) {
        process.stderr.write(`symbi demo: the demo driver ${fileURLToPath(driverUrl)} is missing; build it with npm run build\n`);
        process.exitCode = 1;
        return;
      }
      const { runDemo } = (await import(driverUrl.href)) as { runDemo: RunDemo };
      process.exitCode = await runDemo('package');
    });
}

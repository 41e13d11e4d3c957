import { Command } from 'commander';
import { registerMcpCommand } from './commands/mcp-command.js';
import { registerDslCommand } from './commands/dsl-command.js';
import { registerAuditCommand } from './commands/audit-command.js';
import { registerSchemapinCommand } from './commands/schemapin-command.js';

// Entry point of the `symbi` command line. Each sub-command lives in its own
// module under ./commands; this file only wires them together.
const program = new Command();
program
  .name('symbi')
  .description('Governed MCP server and audit tools for Symbiont agent projects')
  .showHelpAfterError(false)
  .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });

registerMcpCommand(program);
registerDslCommand(program);
registerAuditCommand(program);
registerSchemapinCommand(program);

await program.parseAsync(process.argv);

import { Command } from 'commander';
import { packageVersion } from '../shared/package-version.js';
import { testSwitchRefusal } from '../shared/test-switches.js';

// Entry point of the `symbi` command line. Each sub-command lives in its own
// module under ./commands; only the one being run is loaded (none for
// --version, all of them for help or an unknown name), so `symbi mcp` starts
// without the others' code.
type Register = (program: Command) => void;
const commands: Record<string, () => Promise<Register>> = {
  mcp: async () => (await import('./commands/mcp-command.js')).registerMcpCommand,
  // Hidden: the child process that proves a confinement route (shared/confinement/route-proof.ts).
  'route-proof': async () => (await import('./commands/route-proof-command.js')).registerRouteProofCommand,
  dsl: async () => (await import('./commands/dsl-command.js')).registerDslCommand,
  audit: async () => (await import('./commands/audit-command.js')).registerAuditCommand,
  schemapin: async () => (await import('./commands/schemapin-command.js')).registerSchemapinCommand,
  demo: async () => (await import('./commands/demo-command.js')).registerDemoCommand,
  check: async () => (await import('./commands/check-command.js')).registerCheckCommand,
  policy: async () => (await import('./commands/policy-command.js')).registerPolicyCommand,
};

const program = new Command();
program
  .name('symbi')
  .description('Governed MCP server and audit tools for Symbiont agent projects')
  .version(packageVersion, '-V, --version', 'print the symbi-mcp version')
  .showHelpAfterError(false)
  .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });

// The installed package refuses the test suite's settings rather than ignore them (test-switches.ts).
const refusal = testSwitchRefusal();
if (refusal !== undefined) {
  process.stderr.write(`symbi: ${refusal}\n`);
  process.exit(2);
}

const requested = process.argv[2];
// `symbi --project X` (an MCP client configured without the sub-command): say which one was meant.
const MCP_OPTIONS = ['--project', '--log-format', '--shutdown-grace-ms', '--max-invocations', '--summary-interval'];
if (requested !== undefined && MCP_OPTIONS.some((o) => requested === o || requested.startsWith(`${o}=`))) {
  process.stderr.write(`symbi: ${requested.split('=')[0]} is an option of the mcp sub-command; run: symbi mcp ${process.argv.slice(2).join(' ')}\n`);
  process.exit(2);
}
const versionOnly = requested === '--version' || requested === '-V';
const names = requested !== undefined && Object.hasOwn(commands, requested) ? [requested] : versionOnly ? [] : Object.keys(commands);
for (const name of names) (await commands[name]!())(program);

await program.parseAsync(process.argv);

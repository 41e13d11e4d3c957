import { Command } from 'commander';
import { type CommandRun, runCommandInProcess } from './cli-in-process.js';
import { builtModule } from './server-entry.js';

type McpCommand = typeof import('../../src/supervisor/commands/mcp-command.js');

/**
 * `symbi mcp <args>` parsed in this process by the command's own definition (commander's parsing
 * and the action's option readers, from dist/ as the in-process session loads them), for arguments
 * it refuses before serving: what it writes and the status it exits with. The action reads its
 * options before its first await, so the refusal is written and process.exit called while
 * cli-in-process.ts holds the writes; the exit comes back as the action's rejection, whose code
 * is read here. An argument it accepts would go on to serve, so it is an error here.
 */
export async function refusedMcpArguments(args: string[]): Promise<CommandRun> {
  const { registerMcpCommand } = (await import(builtModule('supervisor/commands/mcp-command.js'))) as McpCommand;
  const program = new Command();
  registerMcpCommand(program);
  let parsing: Promise<unknown> = Promise.resolve();
  const run = runCommandInProcess(() => {
    parsing = program.parseAsync(['mcp', ...args], { from: 'user' });
  });
  // A refusal settles within the microtasks after the action's synchronous part; an accepted argument
  // would be serving by the next macrotask, so that is where this stops waiting and fails.
  const accepted = Symbol('accepted');
  const ended: unknown = await Promise.race([
    parsing.then(
      () => undefined,
      (err: unknown) => err,
    ),
    new Promise((resolve) => setImmediate(() => resolve(accepted))),
  ]);
  if (ended === accepted) throw new Error(`symbi mcp ${args.join(' ')} accepted its arguments and went on to serve; this helper takes refused arguments only`);
  const code = (ended as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'number') throw new Error(`symbi mcp ${args.join(' ')} did not exit while its options were read: ${String(ended)}`);
  return { ...run, code };
}

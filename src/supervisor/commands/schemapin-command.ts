import type { Command } from 'commander';

// Placeholder until the 'schemapin' command lands.
export function registerSchemapinCommand(program: Command): void {
  void program;
}

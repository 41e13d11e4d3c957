import type { Command } from 'commander';

// Placeholder until the 'dsl' command lands.
export function registerDslCommand(program: Command): void {
  void program;
}

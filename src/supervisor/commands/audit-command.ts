import type { Command } from 'commander';

// Placeholder until the 'audit' command lands.
export function registerAuditCommand(program: Command): void {
  void program;
}

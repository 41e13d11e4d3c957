import type { Command } from 'commander';

// Placeholder until the 'mcp' command lands.
export function registerMcpCommand(program: Command): void {
  void program;
}

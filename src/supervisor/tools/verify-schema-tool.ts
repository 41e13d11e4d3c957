import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { PinnedDirectory } from '../../shared/pinned-directory.js';

// Placeholder until the verify_schema tool lands.
export function registerVerifySchemaTool(server: McpServer, options: { project: PinnedDirectory; log: (line: string) => void }): void {
  void server;
  void options;
}

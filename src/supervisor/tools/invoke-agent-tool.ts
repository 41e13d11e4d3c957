import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

// Placeholder until the invoke_agent tool lands (owned by the lead).
export function registerInvokeAgentTool(server: McpServer, context: unknown): void {
  void server;
  void context;
}

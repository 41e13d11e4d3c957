// The peer for the invoke benchmark: a bare MCP SDK server whose one tool makes
// the same chat-completions call as invoke_agent, with no governance at all.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const base = process.env.OPENAI_BASE_URL ?? 'http://127.0.0.1:1/v1';
const server = new McpServer({ name: 'bare-inference', version: '1.0.0' });
server.registerTool('infer', { inputSchema: { prompt: z.string() } }, async ({ prompt }) => {
  const response = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ''}` },
    body: JSON.stringify({ model: process.env.CHAT_MODEL ?? 'm', messages: [{ role: 'user', content: prompt }], max_tokens: 4096 }),
  });
  const body = (await response.json()) as { choices: { message: { content: string } }[] };
  return { content: [{ type: 'text', text: body.choices[0]!.message.content }] };
});
await server.connect(new StdioServerTransport());

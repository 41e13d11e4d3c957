import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

// Shared by the server-*.test.ts and confinement-*.test.ts files: temporary
// projects on disk and a real `symbi mcp` child process driven over stdio by
// the SDK client, with its standard error captured.

import { repoRoot, symbiBin } from './server-entry.js';

export { repoRoot, symbiBin };

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Writes files (relative path -> text or bytes) under a fresh temporary directory. */
export function makeProject(files: Record<string, string | Uint8Array>, prefix = 'symbi-server-'): string {
  const dir = tempDir(prefix);
  writeFiles(dir, files);
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(dir, rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content);
  }
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export interface RunningServer {
  client: Client;
  stderr(): string;
  close(): Promise<void>;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

export async function startServer(projectDir: string, extraArgs: string[] = []): Promise<RunningServer> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [symbiBin, 'mcp', '--project', projectDir, ...extraArgs],
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.tmpdir() },
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'symbi-server-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    close: () => client.close(),
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
  };
}

export function resultText(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** Waits until `predicate` holds for the captured stderr (the summary is written before serving). */
export async function waitForStderr(server: RunningServer, predicate: (text: string) => boolean, tries = 200): Promise<string> {
  for (let i = 0; i < tries; i++) {
    if (predicate(server.stderr())) return server.stderr();
    await new Promise((r) => setTimeout(r, 10));
  }
  return server.stderr();
}

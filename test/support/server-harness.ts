import { spawnSync } from 'node:child_process';
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
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.tmpdir(), ...confinementRouteEnv() },
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

/** SYMBI_CONFINEMENT_ROUTE, when the suite runs under a forced route (test/confinement-routes.test.ts), for the servers it starts. */
export function confinementRouteEnv(): Record<string, string> {
  const route = process.env.SYMBI_CONFINEMENT_ROUTE;
  return route ? { SYMBI_CONFINEMENT_ROUTE: route } : {};
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

/** Why a test cannot start processes in a private mount namespace with a tmpfs over /proc here, or undefined when it can. */
export function namespaceSkip(): string | undefined {
  if (process.platform !== 'linux') return 'needs Linux mount namespaces';
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs over /proc in a private mount namespace (run as root)';
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none /proc && test ! -e /proc/self'], { encoding: 'utf8' });
  if (probe.status !== 0) return `unshare -m with a tmpfs over /proc is not possible here: ${(probe.stderr || probe.error?.message || '').trim()}`;
  return undefined;
}

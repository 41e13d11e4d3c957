import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TEST_ONLY_SETTINGS } from '../../src/shared/test-switches.js';
import { repoRoot, symbiBin } from './server-entry.js';
import { waitFor } from './wait-for.js';

// A real `symbi mcp` child process on a test project, driven over stdio by the
// MCP SDK client, with its standard error captured.

/** How a test starts the server: its environment, its extra arguments, and a command it runs under. */
export interface ServerOptions {
  /** The server's whole environment; serverEnv() when absent. */
  env?: Record<string, string>;
  /** Arguments after `mcp --project <dir>`. */
  args?: string[];
  /** A command line the server runs under (for example `unshare -m sh -c ...`), with node and its arguments appended. */
  launcher?: string[];
  /** The working directory the command starts in; the test runner's when absent. */
  cwd?: string;
}

/**
 * The command and arguments that run `symbi mcp` on `project` as `options` say (no environment).
 * A server given a test-only setting (src/shared/test-switches.ts) runs the clone's build in dist/:
 * the bundle bin/symbi.js runs, like the installed package, refuses those settings.
 */
export function serverCommand(project: string, options: ServerOptions = {}): { command: string; args: string[] } {
  const testOnly = TEST_ONLY_SETTINGS.some((name) => options.env?.[name] !== undefined);
  const entry = testOnly ? path.join(repoRoot, 'dist', 'supervisor', 'cli.js') : symbiBin;
  const node = [process.execPath, entry, 'mcp', '--project', project, ...(options.args ?? [])];
  const [command, ...args] = [...(options.launcher ?? []), ...node];
  return { command: command!, args };
}

/** The default server environment: PATH, HOME and the forced confinement route, if any; nothing else of the test runner's. */
export function serverEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.tmpdir(), ...confinementRouteEnv() };
}

/** SYMBI_CONFINEMENT_ROUTE, when the suite runs under a forced route (test/process/confinement-routes.test.ts), for the servers it starts. */
export function confinementRouteEnv(): Record<string, string> {
  const route = process.env.SYMBI_CONFINEMENT_ROUTE;
  return route ? { SYMBI_CONFINEMENT_ROUTE: route } : {};
}

/** A server environment for invoke_agent against the OpenAI-compatible endpoint at `baseUrl`, plus `extra`. */
export function providerEnv(baseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: 'sk-test-not-a-real-key',
    CHAT_MODEL: 'synthetic-model',
    ...extra,
  };
}

/** A started server and the SDK client connected to it. */
export interface RunningServer {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
  pid(): number;
  close(): Promise<void>;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
}

/** Starts `symbi mcp` on `project` and connects an SDK client to it over stdio. */
export async function startServer(project: string, options: ServerOptions = {}): Promise<RunningServer> {
  const transport = new StdioClientTransport({ ...serverCommand(project, options), env: options.env ?? serverEnv(), cwd: options.cwd, stderr: 'pipe' });
  let stderrText = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderrText += chunk.toString('utf8')));
  const client = new Client({ name: 'symbi-test', version: '0.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => stderrText,
    pid: () => transport.pid ?? -1,
    close: async () => {
      await client.close().catch(() => undefined);
    },
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
  };
}

/** What one invoke_agent call came to: its text, whether it was an error, the server's stderr, and the provider requests it made. */
export interface InvokeOutcome {
  text: string;
  isError: boolean;
  stderr: string;
  requests: number;
}

/** Starts a server on `project`, asks `assistant` to say hello once, counts the requests `endpoint` received meanwhile, and stops the server. */
export async function invokeOnce(project: string, options: ServerOptions, endpoint: { requests: readonly unknown[] }): Promise<InvokeOutcome> {
  const server = await startServer(project, options);
  try {
    const sent = endpoint.requests.length;
    const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'Say hello' } });
    return { text: textOf(result), isError: result.isError === true, stderr: server.stderr(), requests: endpoint.requests.length - sent };
  } finally {
    await server.close();
  }
}

/** Resolves with the captured stderr once `predicate` holds for it, or with what it holds after `timeoutMs`. */
export async function waitForStderr(server: Pick<RunningServer, 'stderr'>, predicate: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
  await waitFor('the server stderr', () => (predicate(server.stderr()) ? true : undefined), timeoutMs).catch(() => undefined);
  return server.stderr();
}

/** The text of a tool result's content, joined. */
export function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

/** The audit reference an invoke_agent result carries, with the words it repeats from `content`. */
export interface AuditRef {
  agent_id: string;
  audit: { run_id: string; path: string; public_key: string };
  /** The released answer, on success. */
  response?: string;
  /** Why no answer was released, on an error after the journal opened. */
  error?: { kind: string; message: string };
}

/**
 * The audit reference of an invoke_agent result. Every caller also checks that structuredContent says
 * what content says (the answer, or the failure with isError), since some clients show only one of
 * them to their model (docs/clients.md).
 */
export function auditOf(result: unknown): AuditRef {
  const { structuredContent, isError } = result as { structuredContent: AuditRef; isError?: boolean };
  assert.ok(structuredContent, 'an invoke_agent result with an audit reference');
  if (isError === true) {
    assert.equal(structuredContent.response, undefined, 'no answer beside an error');
    assert.equal(structuredContent.error?.message, textOf(result), 'structuredContent.error says what content says');
    assert.match(structuredContent.error.kind, /^[a-z0-9_]+$/);
  } else {
    assert.equal(structuredContent.error, undefined, 'no error beside an answer');
    assert.equal(structuredContent.response, textOf(result), 'structuredContent.response is the answer content carries');
  }
  return structuredContent;
}

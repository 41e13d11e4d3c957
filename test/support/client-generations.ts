import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { serverCommand, serverEnv, type ServerOptions } from './server.js';

// A real `symbi mcp` child process driven by the MCP client of either SDK generation:
// - 'v1': @modelcontextprotocol/sdk 1.x's Client, which opens with `initialize` and settles on 2025-11-25;
// - 'v2': @modelcontextprotocol/client 2.x's Client pinned to 2026-07-28: it probes with
//   `server/discover` and then sends every request with the per-request `_meta` envelope, no
//   `initialize` at all.
// A suite written against GenerationServer runs under both (forEachGeneration).

export type Generation = 'v1' | 'v2';

/** Each generation, with the protocol revision its client ends up speaking. */
export const GENERATIONS: ReadonlyArray<{ generation: Generation; revision: string; label: string }> = [
  { generation: 'v1', revision: '2025-11-25', label: 'the v1 SDK client at 2025-11-25' },
  { generation: 'v2', revision: '2026-07-28', label: 'the v2 SDK client at 2026-07-28' },
];

/**
 * The v2 client's stdio transport, probing in place: on the SDK's own StdioClientTransport the
 * `server/discover` probe runs on a sibling process spawned for it; a subclass probes on the
 * connection itself (the SDK's docs/protocol-versions.md), as Claude Code does, so the server under
 * test sees the probe and every request after it, and one process is started, not two.
 */
class InPlaceStdioClientTransport extends ModernStdioClientTransport {}

export interface ToolCallOptions {
  signal?: AbortSignal;
  timeout?: number;
  resetTimeoutOnProgress?: boolean;
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

export interface ToolResultShape {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ListedTool {
  name: string;
  outputSchema?: Record<string, unknown>;
  inputSchema: Record<string, unknown>;
}

export interface GenerationServer {
  generation: Generation;
  /** The revision the connection settled on. */
  revision(): string | undefined;
  listTools(): Promise<ListedTool[]>;
  callTool(name: string, args?: Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResultShape>;
  listResources(): Promise<Array<{ uri: string }>>;
  readResource(uri: string): Promise<{ contents: Array<{ uri: string; text?: string }> }>;
  stderr(): string;
  pid(): number;
  close(): Promise<void>;
}

/** Starts `symbi mcp` on `project` and connects the client of `generation` to it over stdio. */
export async function startGenerationServer(generation: Generation, project: string, options: ServerOptions = {}): Promise<GenerationServer> {
  const params = { ...serverCommand(project, options), env: options.env ?? serverEnv(), cwd: options.cwd, stderr: 'pipe' as const };
  let stderrText = '';
  const keep = (chunk: Buffer): void => void (stderrText += chunk.toString('utf8'));
  if (generation === 'v1') {
    const transport = new LegacyStdioClientTransport(params);
    transport.stderr?.on('data', keep);
    // The v1 client hands the negotiated revision to its transport's setProtocolVersion, if it has one.
    let negotiated: string | undefined;
    Object.assign(transport, { setProtocolVersion: (version: string) => (negotiated = version) });
    const client = new LegacyClient({ name: 'symbi-test-v1', version: '0.0.0' });
    await client.connect(transport);
    return {
      generation,
      revision: () => negotiated,
      listTools: async () => (await client.listTools()).tools,
      callTool: async (name, args, callOptions = {}) => (await client.callTool({ name, arguments: args }, undefined, callOptions)) as ToolResultShape,
      listResources: async () => (await client.listResources()).resources,
      readResource: async (uri) => await client.readResource({ uri }),
      stderr: () => stderrText,
      pid: () => transport.pid ?? -1,
      close: async () => void (await client.close().catch(() => undefined)),
    };
  }
  const transport = new InPlaceStdioClientTransport(params);
  transport.stderr?.on('data', keep);
  const client = new ModernClient({ name: 'symbi-test-v2', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport);
  return {
    generation,
    revision: () => client.getDiscoverResult()?.supportedVersions.find((version) => version === '2026-07-28'),
    listTools: async () => (await client.listTools()).tools,
    callTool: async (name, args, callOptions = {}) => (await client.callTool({ name, arguments: args }, callOptions)) as ToolResultShape,
    listResources: async () => (await client.listResources()).resources,
    readResource: async (uri) => await client.readResource({ uri }),
    stderr: () => stderrText,
    pid: () => transport.pid ?? -1,
    close: async () => void (await client.close().catch(() => undefined)),
  };
}

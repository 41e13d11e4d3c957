import { spawn } from 'node:child_process';
import { serverCommand, serverEnv, type ServerOptions } from './server.js';

// Drives a server process over raw stdio: bytes written as given, every
// stdout line kept as it came, so a test sees exactly what a client would.

export type RawMessage = Record<string, unknown>;

export interface RawStdioServer {
  send(data: string | Buffer): Promise<void>;
  /** Resolves with the first message for which `match` is true (already seen or still to come). */
  waitForMessage(match: (message: RawMessage) => boolean, what: string, timeoutMs?: number): Promise<RawMessage>;
  /** The first message whose id is `id` (a response). */
  waitFor(id: string | number, timeoutMs?: number): Promise<RawMessage>;
  messages(): RawMessage[];
  /** Raw stdout lines, newline removed. */
  lines(): string[];
  /** Everything written to stdout so far, as it came. */
  stdout(): string;
  stderr(): string;
  pid: number;
  /** Sends `signal` to the process. */
  kill(signal: NodeJS.Signals): void;
  /** Resolves with the exit code (null after a signal) once the process has exited. */
  exited: Promise<number | null>;
  /** Closes stdin and resolves with the exit code. */
  end(): Promise<number | null>;
}

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-stdio-test', version: '1' } },
};
export const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
export const jsonLine = (message: unknown): string => `${JSON.stringify(message)}\n`;

/** One tools/call request as a JSON line; a `progressToken` asks for progress notices. */
export function toolCallLine(id: string | number, name: string, args: Record<string, unknown>, progressToken?: string): string {
  const params = progressToken === undefined ? { name, arguments: args } : { name, arguments: args, _meta: { progressToken } };
  return jsonLine({ jsonrpc: '2.0', id, method: 'tools/call', params });
}

/** Starts `command` with piped stdio for a test that reads and writes raw JSON-RPC lines. */
export function spawnRawStdio(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): RawStdioServer {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  const parsed: RawMessage[] = [];
  const waiters: Array<{ match: (m: RawMessage) => boolean; resolve: (m: RawMessage) => void }> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    const before = stdout.split('\n').length - 1;
    stdout += chunk.toString('utf8');
    const all = stdout.split('\n').slice(0, -1);
    for (const line of all.slice(before)) {
      let message: RawMessage;
      try {
        message = JSON.parse(line) as RawMessage;
      } catch {
        continue; // lines() shows it to the test
      }
      parsed.push(message);
      for (const waiter of waiters.filter((w) => w.match(message))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.stdin.on('error', () => undefined);

  const waitForMessage = (match: (m: RawMessage) => boolean, what: string, timeoutMs = 10_000): Promise<RawMessage> => {
    const seen = parsed.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ${what} within ${timeoutMs} ms; stdout: ${stdout.slice(-2000)} stderr: ${stderr.slice(-2000)}`)),
        timeoutMs,
      );
      waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  };
  return {
    send: (data) => new Promise((resolve, reject) => child.stdin.write(data, (err) => (err ? reject(err) : resolve()))),
    waitForMessage,
    waitFor: (id, timeoutMs) => waitForMessage((m) => m.id === id && ('result' in m || 'error' in m), `response to id ${JSON.stringify(id)}`, timeoutMs),
    messages: () => [...parsed],
    lines: () => stdout.split('\n').filter((l) => l.length > 0),
    stdout: () => stdout,
    stderr: () => stderr,
    pid: child.pid!,
    kill: (signal) => void child.kill(signal),
    exited,
    end: () => {
      child.stdin.end();
      return exited;
    },
  };
}

/** Starts `symbi mcp` on `project` as `options` say (the same options as startServer) for raw JSON-RPC over stdio. */
export function spawnRawServer(project: string, options: ServerOptions = {}): RawStdioServer {
  const { command, args } = serverCommand(project, options);
  return spawnRawStdio(command, args, options.env ?? serverEnv());
}

/** Starts `symbi mcp` on `project` and sends the initialize request and the initialized notification. */
export function spawnInitializedServer(project: string, options: ServerOptions = {}): RawStdioServer {
  const server = spawnRawServer(project, options);
  server.send(jsonLine(INITIALIZE) + jsonLine(INITIALIZED)).catch(() => undefined); // a dead server shows in the test's own waits
  return server;
}

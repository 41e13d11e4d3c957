import type { InProcessSession } from './in-process-server.js';
import type { RawMessage } from './raw-stdio.js';

// The session `symbi mcp` serves, run in the test process (./in-process-server.ts), driven by raw
// JSON-RPC lines as ./raw-stdio.ts drives a process: the lines a test writes reach the session's
// input as written, and every line it answers is kept. For a test of what the session does with
// the messages (capacity, cancels), where the bytes crossing a process's stdio are not the point.

/** A session served in process, written to and read as lines. */
export interface RawInProcessSession {
  send(data: string): Promise<void>;
  /** Resolves with the first message whose id is `id` (already seen or still to come). */
  waitFor(id: string | number, timeoutMs?: number): Promise<RawMessage>;
  messages(): RawMessage[];
  /** The operator log so far. */
  stderr(): string;
  /** Closes the session's input, as a client closing standard input does, and resolves with the exit code `symbi mcp` would end with. */
  end(): Promise<number>;
}

/** Writes to and reads `session` (startInProcessSession's, with no client) as lines. */
export function rawLines(session: InProcessSession): RawInProcessSession {
  const parsed: RawMessage[] = [];
  const waiters: { id: string | number; resolve: (m: RawMessage) => void }[] = [];
  let pending = '';
  session.fromServer.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      let message: RawMessage;
      try {
        message = JSON.parse(line) as RawMessage;
      } catch {
        continue; // as raw-stdio.ts: a line that is no JSON is not a message
      }
      parsed.push(message);
      for (const waiter of waiters.filter((w) => 'id' in message && message.id === w.id)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  let ending: Promise<number> | undefined;
  return {
    send: (data) => new Promise<void>((resolve, reject) => session.toServer.write(data, (err) => (err ? reject(err) : resolve()))),
    waitFor: (id, timeoutMs = 10_000) => {
      const seen = parsed.find((m) => 'id' in m && m.id === id);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no answer to ${String(id)} within ${timeoutMs} ms; operator log: ${session.stderr().slice(-2000)}`)),
          timeoutMs,
        );
        waiters.push({
          id,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    messages: () => [...parsed],
    stderr: session.stderr,
    end: () =>
      (ending ??= (async () => {
        session.toServer.end();
        const reason = await session.closed;
        return session.shutdown(`session closed: ${reason}`);
      })()),
  };
}

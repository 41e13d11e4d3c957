import readline from 'node:readline';
import { sessionAnswer } from './ownership-sessions.js';

// The session host of ./ownership-sessions.ts startSessionHost: a process (run as another user,
// or in a mount namespace, by its launcher) that reads one project path a line (JSON) on
// standard input, serves that project as `symbi mcp` would (in-process-server.ts: the same
// wiring, loaded from dist/), asks `assistant` to say hello once, and answers one JSON line:
// the result's text, whether it was an error, and the session's operator log.

const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));

for await (const line of readline.createInterface({ input: process.stdin })) {
  let answer: unknown;
  try {
    answer = await sessionAnswer(JSON.parse(line) as string, env);
  } catch (err) {
    answer = { error: (err as Error).stack ?? String(err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

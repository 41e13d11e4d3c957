import readline from 'node:readline';
import { checkReport, sessionAnswer } from './ownership-sessions.js';

// The session host of ./ownership-sessions.ts startSessionHost: a process (run as another user,
// or in a mount namespace, by its launcher) that reads one request a line (JSON) on standard
// input and answers one JSON line. {"invoke": DIR}: serves that project as `symbi mcp` would
// (in-process-server.ts: the same wiring, loaded from dist/), asks `assistant` to say hello
// once, and answers the result's text, whether it was an error, and the session's operator
// log. {"check": DIR}: answers the report `symbi check --project DIR` would print.

const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));

for await (const line of readline.createInterface({ input: process.stdin })) {
  let answer: unknown;
  try {
    const request = JSON.parse(line) as { invoke: string } | { check: string };
    answer = 'invoke' in request ? await sessionAnswer(request.invoke, env) : { report: await checkReport(request.check, env) };
  } catch (err) {
    answer = { error: (err as Error).stack ?? String(err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

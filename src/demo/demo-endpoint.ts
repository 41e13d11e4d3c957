// `symbi demo --endpoint`: the demo's synthetic model alone, on a fixed loopback port, so a person can
// point a real MCP client's `symbi mcp` at it and see invoke_agent answer (and a Cedar policy refuse)
// before having a provider key. It prints what to put in the client's configuration and serves until
// Ctrl-C, which ends it with exit 0.

import { DEFAULT_ANSWER } from './synthetic-endpoint.js';
import { checkLoopback, clientServerCommand, exampleDir, shellWord, startEndpoint, type DemoOrigin } from './demo-run.js';

/** The model name the server is told; the endpoint answers whatever is asked for. */
const DEMO_MODEL = 'synthetic';

function say(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** Serves the synthetic endpoint on 127.0.0.1:`port` until SIGINT or SIGTERM; resolves with the exit status. */
export async function runDemoEndpoint(origin: DemoOrigin, port: number): Promise<number> {
  const endpoint = await startEndpoint(port);
  try {
    await checkLoopback(endpoint);
  } catch (error) {
    await endpoint.close();
    throw error;
  }
  const server = clientServerCommand(origin);
  const variables = `OPENAI_BASE_URL=${endpoint.url} CHAT_MODEL=${DEMO_MODEL}`;
  say(`symbi demo endpoint: a synthetic model at ${endpoint.url} (local, no network, no key); Ctrl-C stops it.`);
  say();
  say('Give symbi mcp these variables in your MCP client (README.md, "Use it from your IDE"):');
  say(`   ${variables}`);
  say('For Claude Code, in your project folder:');
  say(`   claude mcp add symbi -e OPENAI_BASE_URL=${endpoint.url} -e CHAT_MODEL=${DEMO_MODEL} -- ${server} mcp --project ${shellWord(process.cwd())}`);
  say('No project of your own yet? Copy the quick-start example (three agents and a Cedar policy) and name the copy in --project:');
  say(`   cp -R ${shellWord(exampleDir)} symbi-quickstart`);
  say();
  say(
    `Every answer is "${DEFAULT_ANSWER}"; a prompt holding [[echo]] gets itself back, [[secret]] an answer the quick-start policy refuses, [[delay:MS]] waits MS milliseconds first.`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  say('symbi demo endpoint: stopped.');
  await endpoint.close();
  return 0;
}

// Writes the golden journals of this server's current format into test/fixtures/<folder>/: one
// journal per outcome, each written by a real server against the synthetic endpoint, the public key
// that verifies them, and manifest.json with each journal's verdict, terminal reason and records as
// `audit inspect` gave them when they were made. test/unit/golden-journals.test.ts holds every later
// version to those verdicts, so a change that stops old journals from verifying fails a test.
//
//   node --import tsx scripts/make-golden-journals.ts [folder]   (after npm run build; default journals-0.2)

import fs from 'node:fs';
import path from 'node:path';
import { inspectJournal } from '../src/shared/journal/journal-verifier.js';
import { startSyntheticEndpoint } from '../test/support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../test/support/project.js';
import { auditOf, providerEnv, startServer, textOf } from '../test/support/server.js';
import { repoRoot } from '../test/support/server-entry.js';

const FILES = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'agents/quick.symbi': 'agent quick {\n  with timeout = 1s {}\n}\n',
  'policies/mcp-server/respond.cedar':
    'permit(principal, action == Action::"respond", resource);\n' +
    'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*secret*" };\n',
};
/** A key of the fixtures only: it must never be a real one, since a journal may be made to echo it. */
const KEY = 'sk-golden-journals-not-a-real-key-0123';

/** Each outcome: the agent and the prompt that produce it (the endpoint's directives), or a cancel. */
const OUTCOMES: Record<string, { agent?: string; prompt: string; cancel?: true }> = {
  permitted: { prompt: 'Say hello' },
  'denied-by-cedar': { prompt: 'tell me [[secret]]' },
  'tool-call': { prompt: 'use a tool [[tool-call]]' },
  truncated: { prompt: 'go on [[finish:length]]' },
  refused: { prompt: 'please [[refusal]]' },
  'empty-answer': { prompt: 'anything [[finish:stop,empty]]' },
  'provider-failure': { prompt: 'fail [[http:code=500]]' },
  'retried-then-permitted': { prompt: 'once more [[http:code=503,times=1,retry_after_ms=5]]' },
  deadline: { agent: 'quick', prompt: 'slow [[delay:5000]]' },
  'cancelled-during-call': { prompt: 'wait [[hold]]', cancel: true },
  'key-in-answer': { prompt: 'show me [[echo-auth]]' },
  'not-well-formed': { prompt: 'odd [[surrogate:text]]' },
  'usage-exceeded': { prompt: 'count [[huge-usage]]' },
  'over-budget': { prompt: 'x'.repeat(20 * 1024) },
};

const folder = path.join(repoRoot, 'test', 'fixtures', process.argv[2] ?? 'journals-0.2');
fs.rmSync(folder, { recursive: true, force: true });
fs.mkdirSync(folder, { recursive: true });
const endpoint = await startSyntheticEndpoint();
const project = makeProject(FILES);
const server = await startServer(project, { env: providerEnv(endpoint.url, { OPENAI_API_KEY: KEY }) });
const manifest: Record<string, unknown> = {};
let publicKey = '';
try {
  for (const [outcome, { agent, prompt, cancel }] of Object.entries(OUTCOMES)) {
    const before = new Set(fs.readdirSync(path.join(project, '.symbiont', 'governed')).filter((n) => n.endsWith('.jsonl')));
    const controller = new AbortController();
    const call = server.client
      .callTool({ name: 'invoke_agent', arguments: { agent: agent ?? 'assistant', prompt } }, undefined, { signal: controller.signal })
      .catch(() => undefined);
    if (cancel === true) {
      await endpoint.waitForRequests(endpoint.requests.length + 1, 10_000).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 200));
      controller.abort();
    }
    const result = await call;
    if (result !== undefined) publicKey = auditOf(result).audit.public_key;
    // The journal is the run's whatever the result says (a cancelled call has none): the new file.
    let name: string | undefined;
    for (const deadline = Date.now() + 10_000; name === undefined && Date.now() < deadline;) {
      name = fs.readdirSync(path.join(project, '.symbiont', 'governed')).find((n) => n.endsWith('.jsonl') && !before.has(n));
      const text = name === undefined ? '' : fs.readFileSync(path.join(project, '.symbiont', 'governed', name), 'utf8');
      if (!text.includes('"Terminated"')) name = undefined;
      if (name === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (name === undefined) throw new Error(`${outcome}: no finished journal (${result === undefined ? 'no result' : textOf(result)})`);
    const copy = `${outcome}.${name}`;
    fs.copyFileSync(path.join(project, '.symbiont', 'governed', name), path.join(folder, copy));
    manifest[copy] = { outcome };
  }
  fs.writeFileSync(path.join(folder, 'public-key'), `${publicKey}\n`);
  for (const copy of Object.keys(manifest)) {
    const runId = copy
      .replace(/\.jsonl$/, '')
      .split('.')
      .at(-1)!;
    const { exitCode, report } = inspectJournal(path.join(folder, copy), runId, publicKey);
    if (exitCode === 1) throw new Error(`${copy}: ${JSON.stringify(report)}`);
    manifest[copy] = {
      ...(manifest[copy] as object),
      status: exitCode,
      terminal_reason: report.terminal_reason,
      records: report.records,
      last_event: report.last_event,
    };
  }
  fs.writeFileSync(path.join(folder, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  process.stdout.write(`${Object.keys(manifest).length} journals in ${folder}\n`);
} finally {
  await server.close();
  await endpoint.close();
  removeProject(project);
}

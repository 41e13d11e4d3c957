// The README's client snippets, run as a new user runs them, with the real clients: Claude Code,
// Gemini CLI and Codex at the versions pinned in .ci/client-snippets/package-lock.json (installed with
// `npm ci` into .ci/cache/clients/, kept between runs).
//
// The packed package is published to a local registry (verdaccio on loopback) standing in for the
// public one: it serves symbi-mcp itself and fetches the package's few installed dependencies from
// the real registry. Each client gets a scratch HOME whose .npmrc points npm (and so npx) at that
// registry, and an empty npm cache, so its first start downloads the package exactly as a first
// `npx -y symbi-mcp` does. Each snippet is taken from README.md and run literally through sh, with
// only the project path substituted, in a copy of examples/quickstart/; then each client's own view
// is checked:
//   Gemini CLI   `gemini mcp list` says the server is Connected, once the folder is trusted.
//   Claude Code  `claude mcp list` says Connected, once the folder is trusted and the project's
//                server approved (the settings written here are what those two clicks save).
//   Codex        `codex app-server`'s mcpServerStatus/list starts the server and lists its tools; the
//                `printenv OPENAI_API_KEY | codex login --with-api-key` line of docs/clients.md signs
//                in (with a stand-in key: nothing checks a key before a request).
// The dialog answers and screen texts docs/clients.md (the first start in each client, linked from the
// README) quotes for Claude Code and Codex are looked up in the pinned clients' native binaries, which
// hold their interface strings as text: a client update that renames "Yes, I trust this folder" fails
// here. (Which answer is highlighted, and the order of the
// dialogs, were seen in a terminal and are not checked.)
//
//
// Then the model's view: each client runs headless with docs/clients.md's line (`claude -p`, `gemini -p`,
// `codex exec`) against a scripted fake of its own model API on loopback (test/support/client-models.ts),
// the server's own model being the demo's synthetic endpoint. The fake has the client call invoke_agent
// three times: permitted (65 s, longer than any 60 s default clock), refused by Cedar, unknown agent. Each
// next request the client sends its model must carry the answer text, then each refusal in words; none
// may carry the server's provider key, which the snippet must hand to the server.
//
// Usage: node --import tsx test/e2e/client-snippets.ts [--only claude,gemini,codex] [--tarball FILE] [--keep]
// Network: the npm registry only (the clients and the package's dependencies); no real model is called.

import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../../src/demo/synthetic-endpoint.js';
import { startFakeModel, type FakeModel, type ModelApi, type RecordedRequest, type ScriptedCall } from '../support/client-models.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const pinnedClients = path.join(repoRoot, '.ci', 'client-snippets');
const clientsDir = path.join(repoRoot, '.ci', 'cache', 'clients');
const clientBin = path.join(clientsDir, 'node_modules', '.bin');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const PROJECT_PLACEHOLDER = '/abs/path/to/project';
/** The key a snippet spells out (Codex's); the run gives the server its own stand-in. */
const KEY_PLACEHOLDER = 'sk-your-key';
/** The first start in each client, which the README's client sections link to. */
const CLIENTS_DOC = path.join(repoRoot, 'docs', 'clients.md');
/** The tools every client must see, by name. */
const TOOLS = ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema'];
const CLIENT_TIMEOUT_MS = 180_000;
/** What docs/clients.md's Claude Code steps quote from Claude Code's folder-trust and project-server dialogs. */
const CLAUDE_QUOTES = [
  'Quick safety check: Is this a project you created or one you trust?',
  'No, exit',
  'Yes, I trust this folder',
  'New MCP server found in this project',
  'Use this MCP server',
  'Use this and all future MCP servers in this project',
  'Continue without using this MCP server',
  'Detected a custom API key in your environment',
  'Project MCPs',
  'No MCP servers configured',
  'No MCP servers loaded',
];
/** What docs/clients.md's Codex CLI steps quote from Codex's sign-in and trust screens and from /mcp. */
const CODEX_QUOTES = [
  'Choose how you want to use Codex.',
  'Sign in with ChatGPT',
  'Sign in with Device Code',
  'Sign in another way',
  'Use an OpenAI API key',
  'Trust this folder?',
  'Trust and continue',
  'codex_tui',
];
const CLIENTS = ['claude', 'gemini', 'codex'] as const;
type ClientName = (typeof CLIENTS)[number];

function say(message: string): void {
  process.stderr.write(`client-snippets: ${message}\n`);
}

/** Installs the pinned clients unless .ci/cache/clients already holds exactly that lock file. */
function installClients(): void {
  const lock = fs.readFileSync(path.join(pinnedClients, 'package-lock.json'), 'utf8');
  const cachedLock = path.join(clientsDir, 'package-lock.json');
  if (fs.existsSync(cachedLock) && fs.readFileSync(cachedLock, 'utf8') === lock && fs.existsSync(clientBin)) return;
  say('installing the pinned clients (npm ci in .ci/cache/clients)');
  fs.rmSync(clientsDir, { recursive: true, force: true });
  fs.mkdirSync(clientsDir, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(pinnedClients, file), path.join(clientsDir, file));
  execFileSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: clientsDir, stdio: ['ignore', process.stderr, process.stderr] });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Registry {
  url: string;
  process: ChildProcess;
}

/** Starts verdaccio on loopback: symbi-mcp only from what is published to it, everything else from the real registry. */
async function startRegistry(scratch: string): Promise<Registry> {
  const port = await freePort();
  const upstream = execFileSync(npm, ['config', 'get', 'registry'], { encoding: 'utf8' }).trim();
  const config = path.join(scratch, 'verdaccio.yaml');
  fs.writeFileSync(
    config,
    [
      `storage: ${JSON.stringify(path.join(scratch, 'registry-storage'))}`,
      'auth:',
      '  htpasswd:',
      `    file: ${JSON.stringify(path.join(scratch, 'htpasswd'))}`,
      '    max_users: 1',
      'uplinks:',
      '  npmjs:',
      `    url: ${JSON.stringify(upstream)}`,
      'packages:',
      "  'symbi-mcp':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      '    proxy: npmjs',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    [path.join(clientsDir, 'node_modules', 'verdaccio', 'bin', 'verdaccio'), '--config', config, '--listen', `127.0.0.1:${port}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}-/ping`)).ok) return { url, process: child };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`verdaccio did not start: ${output.slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Creates the registry's one user and returns its token (the CouchDB user API npm's adduser uses). */
async function registryToken(registry: Registry): Promise<string> {
  const response = await fetch(`${registry.url}-/user/org.couchdb.user:ci`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ci', password: 'ci-local-registry-only', type: 'user', roles: [] }),
  });
  const body = (await response.json()) as { token?: string };
  if (!response.ok || typeof body.token !== 'string') throw new Error(`the local registry refused the user: ${response.status} ${JSON.stringify(body)}`);
  return body.token;
}

function packTarball(scratch: string, given: string | undefined): string {
  if (given !== undefined) return path.resolve(given);
  say('npm pack (prepack builds the package)');
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', scratch], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  return path.join(scratch, (JSON.parse(out) as { filename: string }[])[0]!.filename);
}

/** The first line of a README code block that starts with this command (`claude mcp add`, ...). */
function readmeSnippet(command: string): string {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  for (const block of readme.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```/gm)) {
    const line = block[1]!.split('\n').find((l) => l.startsWith(`${command} `) && l.includes('symbi-mcp mcp'));
    if (line !== undefined) return line;
  }
  throw new Error(`README.md has no sh block with a "${command} ... symbi-mcp mcp" line`);
}

/** The README's `config.toml` block for a server entry (`[mcp_servers.symbi]`), whole. */
function readmeToml(table: string): string {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  for (const block of readme.matchAll(/^```toml\n([\s\S]*?)^```/gm)) if (block[1]!.startsWith(`${table}\n`)) return block[1]!;
  throw new Error(`README.md has no toml block starting with ${table}`);
}

/** The first line of a docs/clients.md sh block that starts with `prefix`, whatever follows. */
function clientsDocLine(prefix: string): string {
  const doc = fs.readFileSync(CLIENTS_DOC, 'utf8');
  for (const block of doc.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```/gm)) {
    const line = block[1]!.split('\n').find((l) => l.startsWith(prefix));
    if (line !== undefined) return line;
  }
  throw new Error(`docs/clients.md has no sh block with a line starting "${prefix}"`);
}

/** The `## heading` section of docs/clients.md, its line breaks and indentation read as single spaces. */
function clientsDocSection(heading: string): string {
  const doc = fs.readFileSync(CLIENTS_DOC, 'utf8');
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/clients.md has no "## ${heading}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end).replace(/\s+/g, ' ');
}

/**
 * Checks that the docs/clients.md section quotes each string and that the client's native binary holds
 * it: the strings of the dialogs the page walks through, as the pinned client shows them.
 */
function checkQuoted(client: string, heading: string, binaries: string[], quotes: string[]): void {
  const section = clientsDocSection(heading);
  const unquoted = quotes.filter((quote) => !section.includes(quote));
  if (unquoted.length > 0)
    throw new Error(`docs/clients.md's ## ${heading} no longer quotes ${unquoted.map((q) => `"${q}"`).join(', ')}; update the list here with it`);
  const existing = binaries.filter((file) => fs.existsSync(file));
  if (existing.length === 0) throw new Error(`${client}: no native binary found among ${binaries.join(', ')}`);
  let missing = quotes;
  for (const file of existing) {
    const contents = fs.readFileSync(file);
    missing = missing.filter((quote) => !contents.includes(quote));
  }
  if (missing.length > 0)
    throw new Error(
      `the pinned ${client} does not show ${missing.map((q) => `"${q}"`).join(', ')} (searched ${existing.join(', ')}); docs/clients.md's ## ${heading} quotes it`,
    );
}

/** The native binaries of a client installed in .ci/cache/clients: the bin's target and the platform packages' executables. */
function nativeBinaries(bin: string, scope: string, packagePrefix: string, relative: (dir: string) => string[]): string[] {
  const found = [fs.realpathSync(path.join(clientBin, bin))];
  const scopeDir = path.join(clientsDir, 'node_modules', scope);
  for (const name of fs.existsSync(scopeDir) ? fs.readdirSync(scopeDir) : []) {
    if (name.startsWith(`${packagePrefix}-`)) found.push(...relative(path.join(scopeDir, name)));
  }
  return found;
}

const claudeBinaries = (): string[] =>
  nativeBinaries('claude', '@anthropic-ai', 'claude-code', (dir) => [path.join(dir, 'claude'), path.join(dir, 'claude.exe')]);

const codexBinaries = (): string[] =>
  nativeBinaries('codex', '@openai', 'codex', (dir) => {
    const vendor = path.join(dir, 'vendor');
    if (!fs.existsSync(vendor)) return [];
    return fs.readdirSync(vendor).flatMap((triple) => [path.join(vendor, triple, 'bin', 'codex'), path.join(vendor, triple, 'bin', 'codex.exe')]);
  });

interface Scratch {
  root: string;
  home: string;
  project: string;
  env: NodeJS.ProcessEnv;
}

/** A fresh HOME, npm cache and project for one client, with npm pointed at the local registry. */
function scratchFor(root: string, client: ClientName, registry: Registry, token: string): Scratch {
  const dir = path.join(root, client);
  const home = path.join(dir, 'home');
  const project = path.join(dir, 'project');
  fs.mkdirSync(home, { recursive: true });
  fs.cpSync(path.join(repoRoot, 'examples', 'quickstart'), project, { recursive: true });
  const host = registry.url.replace(/^http:/, '');
  fs.writeFileSync(path.join(home, '.npmrc'), `registry=${registry.url}\n${host}:_authToken=${token}\n`);
  const env: NodeJS.ProcessEnv = {
    HOME: home,
    PATH: [clientBin, path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
    TERM: 'dumb',
    NO_COLOR: '1',
    CI: '1',
    // An empty cache: the client's first start downloads the package as a first `npx -y` does.
    npm_config_cache: path.join(dir, 'npm-cache'),
    npm_config_update_notifier: 'false',
    // No OPENAI_API_KEY: a first contact, before the user has set a key; the snippets must connect anyway.
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
  return { root: dir, home, project: fs.realpathSync(project), env };
}

function run(s: Scratch, command: string, args: string[], label: string): string {
  const result = spawnSync(command, args, { cwd: s.project, env: s.env, encoding: 'utf8', timeout: CLIENT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.error !== undefined || result.status !== 0)
    throw new Error(`${label} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`}):\n${output.slice(-3000)}`);
  return output;
}

/** Runs one README line through sh, as a user pastes it, with the project path filled in. */
function runSnippet(s: Scratch, snippet: string): void {
  const line = snippet.split(PROJECT_PLACEHOLDER).join(s.project).split(KEY_PLACEHOLDER).join(SERVER_KEY);
  say(`  $ ${line}`);
  run(s, '/bin/sh', ['-c', line], 'the README snippet');
}

function checkGemini(s: Scratch): string {
  runSnippet(s, readmeSnippet('gemini mcp add'));
  // What docs/clients.md says a user sees before trusting the folder.
  const untrusted = run(s, clientBin + '/gemini', ['mcp', 'list'], 'gemini mcp list');
  if (!/symbi.*Disabled/.test(untrusted)) throw new Error(`before the folder is trusted, gemini mcp list should show symbi as Disabled:\n${untrusted}`);
  // The user's "Trust folder" answer (or /permissions) is saved in ~/.gemini/trustedFolders.json.
  fs.mkdirSync(path.join(s.home, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(s.home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [s.project]: 'TRUST_FOLDER' }, null, 2));
  const listed = run(s, clientBin + '/gemini', ['mcp', 'list'], 'gemini mcp list');
  const line = listed.split('\n').find((l) => /\bsymbi\b/.test(l));
  if (line === undefined || !/Connected/.test(line) || /Disconnected/.test(line))
    throw new Error(`gemini mcp list does not show symbi as Connected:\n${listed}`);
  return line.trim();
}

function checkClaude(s: Scratch): string {
  runSnippet(s, readmeSnippet('claude mcp add'));
  // What docs/clients.md says a user sees before the approval.
  const pending = run(s, clientBin + '/claude', ['mcp', 'list'], 'claude mcp list');
  if (!/symbi.*Pending approval/.test(pending)) throw new Error(`before the approval, claude mcp list should show symbi as Pending approval:\n${pending}`);
  checkQuoted('Claude Code', 'Claude Code', claudeBinaries(), CLAUDE_QUOTES);
  // The two clicks docs/clients.md describes: "Yes, I trust this folder" (saved in ~/.claude.json) and
  // approving the project's .mcp.json server (saved in .claude/settings.local.json).
  const stateFile = path.join(s.home, '.claude.json');
  const state = fs.existsSync(stateFile) ? (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as Record<string, unknown>) : {};
  const projects = (state.projects ?? {}) as Record<string, Record<string, unknown>>;
  projects[s.project] = { ...(projects[s.project] ?? {}), hasTrustDialogAccepted: true };
  fs.writeFileSync(stateFile, JSON.stringify({ ...state, projects }, null, 2));
  fs.mkdirSync(path.join(s.project, '.claude'), { recursive: true });
  fs.writeFileSync(path.join(s.project, '.claude', 'settings.local.json'), JSON.stringify({ enabledMcpjsonServers: ['symbi'] }, null, 2));
  const listed = run(s, clientBin + '/claude', ['mcp', 'list'], 'claude mcp list');
  const line = listed.split('\n').find((l) => l.startsWith('symbi'));
  if (line === undefined || !/Connected/.test(line)) throw new Error(`claude mcp list does not show symbi as Connected:\n${listed}`);
  if (/warning/i.test(listed)) throw new Error(`claude mcp list warns about the snippet's entry:\n${listed}`);
  return line.trim();
}

/** Codex's own view: its app server starts every configured MCP server and reports each one's tools. */
async function checkCodex(s: Scratch): Promise<string> {
  runSnippet(s, readmeSnippet('codex mcp add'));
  const child = spawn(clientBin + '/codex', ['app-server'], { cwd: s.project, env: s.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const answers = new Map<number, (message: Record<string, unknown>) => void>();
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (typeof message.id === 'number') answers.get(message.id)?.(message);
  });
  let nextId = 1;
  let seen = '';
  const request = (method: string, params: unknown): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => reject(new Error(`codex app-server did not answer ${method}: ${stderr.slice(-2000)}`)), CLIENT_TIMEOUT_MS);
      answers.set(id, (message) => {
        clearTimeout(timer);
        if (message.error !== undefined) reject(new Error(`codex app-server ${method}: ${JSON.stringify(message.error)}`));
        else resolve(message.result as Record<string, unknown>);
      });
      child.stdin.write(JSON.stringify({ id, method, params }) + '\n');
    });
  try {
    await request('initialize', { clientInfo: { name: 'symbi-client-snippets', version: '1' } });
    child.stdin.write(JSON.stringify({ method: 'initialized', params: {} }) + '\n');
    const status = (await request('mcpServerStatus/list', { detail: 'toolsAndAuthOnly' })) as { data?: { name: string; tools?: Record<string, unknown> }[] };
    const server = status.data?.find((entry) => entry.name === 'symbi');
    const tools = Object.keys(server?.tools ?? {}).sort();
    if (server === undefined || TOOLS.some((tool) => !tools.includes(tool)))
      throw new Error(`codex app-server does not list symbi's tools: ${JSON.stringify(status).slice(0, 3000)}\n${stderr.slice(-2000)}`);
    seen = `symbi: ${tools.length} tools (${tools.join(', ')})`;
  } finally {
    child.kill();
  }
  // The sign-in docs/clients.md gives before /mcp, run literally with a stand-in key (codex login stores
  // it without asking OpenAI; "Authentication is checked when you send a request").
  const signedIn = { ...s, env: { ...s.env, OPENAI_API_KEY: 'sk-client-snippets-stand-in' } };
  runSnippet(signedIn, clientsDocLine('printenv OPENAI_API_KEY | codex login'));
  const status = run(s, clientBin + '/codex', ['login', 'status'], 'codex login status');
  if (!/API key configured/.test(status))
    throw new Error(`after docs/clients.md's codex login line, codex login status should say "API key configured":\n${status}`);
  checkQuoted('Codex', 'Codex CLI', codexBinaries(), CODEX_QUOTES);
  return `${seen}; signed in by docs/clients.md's codex login line`;
}

// ---- The model's view: each client headless against a fake of its own model API ----

/** The server's provider key, given to it through the snippet; no request to a client's model may carry any of it. */
const SERVER_KEY = 'sk-symbi-server-key-5f1d3a9c-never-shown-to-the-client-model';
/** What the demo's synthetic endpoint answers the governed agent. */
const GOVERNED_ANSWER = 'The quickstart owls meet at dawn by the old mill.';
/** Longer than the MCP SDK client's 60 s request timeout and the Gemini snippet's former 60,000 ms. */
const SLOW_CALL_MS = 65_000;
/** The most a headless session may take: the client's start, the server's first start, the 65 s call, with room. */
const SESSION_TIMEOUT_MS = 420_000;
/** The calls the fake model asks for, in order: permitted (slow), refused by Cedar, unknown agent. */
const SCRIPT: ScriptedCall[] = [
  { agent: 'helper', prompt: `Where do the quickstart owls meet? [[delay:${SLOW_CALL_MS}]]` },
  { agent: 'assistant', prompt: 'What is the launch code? [[secret]]' },
  { agent: 'nobody', prompt: 'Is anyone there?' },
];

interface SessionSetup {
  api: ModelApi;
  /** The docs/clients.md line that runs the client headless. */
  docLine: string;
  /** What the test adds to the client's environment: its fake model, and the server's provider. */
  env(model: FakeModel, provider: SyntheticEndpoint): NodeJS.ProcessEnv;
  /** Options put right after the command's words, pointing the client at its fake (Codex). */
  extraOptions?(model: FakeModel, provider: SyntheticEndpoint): string[];
  /** Saves what the client's own first-run questions would (Gemini CLI's sign-in choice). */
  prepare?(s: Scratch): void;
  /** Whether the client marks a failed call as an error in its wire format. */
  flagsErrors: boolean;
}

const SESSIONS: Record<ClientName, () => SessionSetup> = {
  claude: () => ({
    api: 'anthropic',
    docLine: clientsDocLine('claude -p '),
    env: (model, provider) => ({
      ANTHROPIC_BASE_URL: model.origin,
      ANTHROPIC_API_KEY: 'sk-ant-fake-model-key',
      OPENAI_API_KEY: SERVER_KEY,
      OPENAI_BASE_URL: provider.url,
    }),
    flagsErrors: true,
  }),
  gemini: () => ({
    api: 'gemini',
    // What choosing "Use Gemini API key" at the first start saves; with only the environment, Gemini CLI
    // 0.61 takes GOOGLE_GEMINI_BASE_URL for its "gateway" sign-in, which -p refuses as an invalid method.
    prepare: (s) => mergeJson(path.join(s.home, '.gemini', 'settings.json'), { security: { auth: { selectedType: 'gemini-api-key' } } }),
    docLine: clientsDocLine('gemini -p '),
    env: (model, provider) => ({
      GOOGLE_GEMINI_BASE_URL: model.origin,
      GEMINI_API_KEY: 'fake-gemini-model-key',
      OPENAI_API_KEY: SERVER_KEY,
      OPENAI_BASE_URL: provider.url,
    }),
    flagsErrors: true,
  }),
  codex: () => ({
    api: 'openai-responses',
    // The README's config.toml form of the entry, in place of what its `codex mcp add` line wrote (the
    // connection check ran that one): it carries tool_timeout_sec.
    prepare: (s) =>
      fs.writeFileSync(
        path.join(s.home, '.codex', 'config.toml'),
        readmeToml('[mcp_servers.symbi]').split(PROJECT_PLACEHOLDER).join(s.project).split(KEY_PLACEHOLDER).join(SERVER_KEY),
      ),
    docLine: clientsDocLine('codex exec '),
    env: () => ({ FAKE_CODEX_MODEL_KEY: 'fake-codex-model-key' }),
    // Codex gives a server only the variables its entry names, so the provider URL goes into the entry.
    extraOptions: (model, provider) => [
      `-c 'model_provider="fake"'`,
      `-c 'model="fake-model"'`,
      `-c 'model_providers.fake={ name = "fake", base_url = "${model.origin}/v1", wire_api = "responses", env_key = "FAKE_CODEX_MODEL_KEY" }'`,
      `-c 'mcp_servers.symbi.env.OPENAI_BASE_URL="${provider.url}"'`,
    ],
    flagsErrors: false,
  }),
};

/** Merges `value` into the JSON object in `file` (one level deep), creating it when missing. */
function mergeJson(file: string, value: Record<string, unknown>): void {
  const current = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  for (const [key, inner] of Object.entries(value)) {
    const old = current[key];
    current[key] = typeof old === 'object' && old !== null && typeof inner === 'object' && inner !== null ? { ...old, ...inner } : inner;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(current, null, 2));
}

function excerpt(text: string, max = 240): string {
  return text.length <= max ? text : `${text.slice(0, max)}...`;
}

/** Up to `max` characters of `text` around the first match of `pattern` (its start when none). */
function around(text: string, pattern: RegExp, max = 200): string {
  const at = Math.max(0, (pattern.exec(text)?.index ?? 0) - 40);
  return `${at > 0 ? '...' : ''}${excerpt(text.slice(at), max)}`;
}

/**
 * Runs docs/clients.md's headless line for the client against a fake of its model API, which has it
 * call invoke_agent as SCRIPT says, and checks what the client put in front of its model after each call.
 */
async function checkModelView(name: ClientName, s: Scratch, provider: SyntheticEndpoint): Promise<string> {
  const setup = SESSIONS[name]();
  setup.prepare?.(s);
  const model = await startFakeModel(setup.api, SCRIPT);
  try {
    const [command, ...rest] = setup.docLine.split(' ');
    const words = command === 'codex' ? 2 : 1;
    const head = [command, ...rest.slice(0, words - 1)].join(' ');
    const tail = rest.slice(words - 1).join(' ');
    const line = [head, ...(setup.extraOptions?.(model, provider) ?? []), tail].join(' ');
    say(`  $ ${setup.docLine}`);
    const providerBefore = provider.requests.length;
    const child = spawn('/bin/sh', ['-c', line], { cwd: s.project, env: { ...s.env, ...setup.env(model, provider) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), SESSION_TIMEOUT_MS);
    const code = await new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
    clearTimeout(timer);
    // Kept with --keep, for reading what the client sent.
    fs.writeFileSync(path.join(s.root, 'model-requests.json'), JSON.stringify(model.requests, null, 2));
    const tail_ = `\n--- the client's output ---\n${excerpt(output, 4000)}`;
    if (code !== 0) throw new Error(`the headless ${name} session ended with ${code ?? 'a kill after ' + SESSION_TIMEOUT_MS / 1000 + ' s'}${tail_}`);
    const after = (n: number): RecordedRequest => {
      const found = model.requests.find((r) => r.toolName !== undefined && r.results.length === n);
      if (found === undefined)
        throw new Error(
          `${name} never sent its model a request with ${n} tool result(s) (${model.requests.length} requests: ${model.requests.map((r) => `${r.method} ${r.path} tools=${r.toolName ?? '-'} results=${r.results.length}`).join('; ')})${tail_}`,
        );
      return found;
    };
    const toolName = after(0).toolName!;
    const answered = after(1).results[0]!;
    const refused = after(2).results[1]!;
    const unknown = after(3).results[2]!;
    const problems: string[] = [];
    if (!answered.raw.includes(GOVERNED_ANSWER)) problems.push(`after the permitted call the model did not get the answer text: ${excerpt(answered.raw, 600)}`);
    if (!/Cedar policy denied/.test(refused.raw))
      problems.push(`after the Cedar refusal the model did not get the refusal in words: ${excerpt(refused.raw, 600)}`);
    if (refused.raw.includes('launch code is')) problems.push(`the withheld answer reached the model: ${excerpt(refused.raw, 600)}`);
    if (setup.flagsErrors && !refused.flaggedError) problems.push(`the Cedar refusal is not flagged as an error: ${excerpt(refused.raw, 600)}`);
    if (!/unknown agent/.test(unknown.raw) || !unknown.raw.includes('nobody'))
      problems.push(`after the unknown agent the model did not get the refusal in words: ${excerpt(unknown.raw, 600)}`);
    if (setup.flagsErrors && !unknown.flaggedError) problems.push(`the unknown-agent refusal is not flagged as an error: ${excerpt(unknown.raw, 600)}`);
    const keyFragment = SERVER_KEY.slice(3, 27);
    for (const request of model.requests) {
      const seen = `${JSON.stringify(request.headers)}\n${request.path}\n${request.rawBody}`;
      if (seen.includes(keyFragment)) problems.push(`the server's provider key reached ${name}'s model in ${request.method} ${request.path}`);
    }
    // The snippet must hand the server its key: the governed agent's model saw it as the credential.
    const keyed = provider.requests.slice(providerBefore).some((r) => String(r.headers.authorization ?? '').includes(SERVER_KEY));
    if (!keyed) problems.push(`the server did not send the key the snippet gives it (OPENAI_API_KEY) to its provider`);
    if (problems.length > 0) throw new Error(`${problems.join('\n')}${tail_}`);
    return [
      `tool ${toolName}`,
      `answer: ${around(answered.raw, /quickstart owls/)}`,
      `Cedar refusal${refused.flaggedError ? ' (flagged as an error)' : ''}: ${around(refused.raw, /Cedar policy denied/)}`,
      `unknown agent${unknown.flaggedError ? ' (flagged as an error)' : ''}: ${around(unknown.raw, /unknown agent/)}`,
      `${model.requests.length} requests to the model, none with the server's key`,
    ].join('\n    ');
  } finally {
    await model.close();
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { only: { type: 'string' }, tarball: { type: 'string' }, keep: { type: 'boolean', default: false } } });
  const only = values.only === undefined ? [...CLIENTS] : values.only.split(',');
  for (const name of only) if (!(CLIENTS as readonly string[]).includes(name)) throw new Error(`--only takes ${CLIENTS.join(', ')}, not "${name}"`);
  installClients();
  // Under .ci/cache rather than the system temporary folder: Codex declines to set up its helpers under /tmp.
  fs.mkdirSync(path.join(repoRoot, '.ci', 'cache'), { recursive: true });
  const root = fs.mkdtempSync(path.join(repoRoot, '.ci', 'cache', 'snippets-'));
  let registry: Registry | undefined;
  let provider: SyntheticEndpoint | undefined;
  let failed = 0;
  try {
    provider = await startSyntheticEndpoint({ answer: GOVERNED_ANSWER });
    const tarball = packTarball(root, values.tarball);
    registry = await startRegistry(root);
    const token = await registryToken(registry);
    const publisher = scratchFor(root, 'publish' as ClientName, registry, token);
    run(publisher, npm, ['publish', tarball, '--ignore-scripts'], `npm publish to the local registry`);
    say(`published ${path.basename(tarball)} to ${registry.url}`);
    const checks: Record<ClientName, (s: Scratch) => string | Promise<string>> = { gemini: checkGemini, claude: checkClaude, codex: checkCodex };
    for (const name of only as ClientName[]) {
      const started = Date.now();
      say(`${name}:`);
      try {
        const scratch = scratchFor(root, name, registry, token);
        const seen = await checks[name](scratch);
        say(`  connected in ${((Date.now() - started) / 1000).toFixed(1)} s: ${seen}`);
        const viewed = Date.now();
        const view = await checkModelView(name, scratch, provider);
        say(`  the model's view, ok in ${((Date.now() - viewed) / 1000).toFixed(1)} s:\n    ${view}`);
      } catch (error) {
        failed += 1;
        say(`  FAILED: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  } finally {
    registry?.process.kill();
    await provider?.close();
    if (values.keep) say(`scratch kept in ${root}`);
    else fs.rmSync(root, { recursive: true, force: true });
  }
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);

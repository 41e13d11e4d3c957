import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { parse as parseToml } from 'smol-toml';
import { cleanEnv, installedPackage } from '../support/packed-package.js';
import { repoRoot } from '../support/server-entry.js';

// The README's IDE configuration snippets are what people paste. Every one is parsed here the way its
// client reads it (the `claude`, `gemini` and `codex` command lines with each CLI's option rules, the
// `mcpServers` and VS Code `servers` JSON, Codex's TOML), its placeholders and client-expanded variables
// replaced, and the command it names is started and asked for initialize + tools/list.
//
// `npx -y symbi-mcp ...` snippets run against the packed tarball: npx is started as written, in a folder
// where that tarball is installed (test/support/packed-package.ts). npx runs a package that is already
// in the local project, so it resolves `symbi-mcp` to the tarball's `symbi-mcp` bin without the registry
// (the name is not published from here; a registry fetch would fail the test, not pass it).

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const REPO_PLACEHOLDER = '/abs/path/to/symbi-mcp';
const PROJECT_PLACEHOLDER = '/abs/path/to/project';
const EXPECTED_TOOLS = ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema'];
/** The value this test gives a variable the client would expand from the user's environment. */
const EXPANDED_VALUE = 'readme-snippet-test-value';

interface Fence {
  lang: string;
  body: string;
  /** The nearest heading above the block, e.g. "Claude Desktop". */
  heading: string;
}

function fences(markdown: string): Fence[] {
  const found: Fence[] = [];
  const pattern = /^```([A-Za-z0-9_-]*)[ \t]*\n([\s\S]*?)^```[ \t]*$/gm;
  for (const match of markdown.matchAll(pattern)) {
    const headings = [...markdown.slice(0, match.index).matchAll(/^#+ (.*)$/gm)];
    found.push({ lang: match[1]!, body: match[2]!, heading: headings[headings.length - 1]?.[1] ?? '' });
  }
  return found;
}

const ideSection = /\n## Use it from your IDE\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';

interface ServerCommand {
  origin: string;
  heading: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** VS Code `inputs` ids the snippet may reference as ${input:id}. */
  inputs?: string[];
}

function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}

function envPair(value: string | undefined, origin: string): [string, string] {
  const at = value?.indexOf('=') ?? -1;
  assert.ok(value !== undefined && at > 0, `${origin}: an environment option takes KEY=VALUE, got ${value}`);
  return [value.slice(0, at), value.slice(at + 1)];
}

function shellLines(prefix: string): { fence: Fence; line: string }[] {
  const found: { fence: Fence; line: string }[] = [];
  for (const fence of fences(ideSection)) {
    if (!['sh', 'bash', 'shell'].includes(fence.lang)) continue;
    for (const raw of fence.body.split('\n')) if (raw.trim().startsWith(prefix)) found.push({ fence, line: raw.trim() });
  }
  return found;
}

// `claude mcp add [options] <name> -- <command> [args...]`. Its -e/--env is variadic, so the name must come
// before it (a name after -e is read as one more variable: anthropics/claude-code#29221); this parser
// insists on the name first, then takes the options up to `--`.
function claudeCodeSnippets(): ServerCommand[] {
  return shellLines('claude mcp add').map(({ fence, line }) => {
    const words = shellWords(line);
    const origin = `${fence.heading}: ${line}`;
    const separator = words.indexOf('--');
    assert.ok(separator > 0, `${origin}: the server command follows --`);
    const name = words[3]!;
    assert.ok(!name.startsWith('-'), `${origin}: the server name comes right after "claude mcp add"`);
    const env: Record<string, string> = {};
    const options = words.slice(4, separator);
    for (let i = 0; i < options.length; i += 1) {
      const option = options[i]!;
      if (option === '-e' || option === '--env') {
        const [key, value] = envPair(options[++i], origin);
        env[key] = value;
      } else if (option === '-s' || option === '--scope')
        assert.ok(['local', 'project', 'user'].includes(options[++i] ?? ''), `${origin}: scope is local, project or user`);
      else if (option === '-t' || option === '--transport') assert.equal(options[++i], 'stdio', `${origin}: a command needs the stdio transport`);
      else assert.fail(`${origin}: unexpected ${option} (allowed: -e/--env, -s/--scope, -t/--transport)`);
    }
    const [command, ...args] = words.slice(separator + 1);
    return { origin, heading: fence.heading, command: command!, args, env };
  });
}

// `gemini mcp add [options] <name> <commandOrUrl> [args...]` (yargs, packages/cli/src/commands/mcp/add.ts):
// -e takes one value, arguments after `--` are appended to the server arguments, and server arguments
// that look like options must come after `--` so they are not taken for Gemini's own.
function geminiSnippets(): ServerCommand[] {
  return shellLines('gemini mcp add').map(({ fence, line }) => {
    const words = shellWords(line).slice(3);
    const origin = `${fence.heading}: ${line}`;
    const separator = words.includes('--') ? words.indexOf('--') : words.length;
    const env: Record<string, string> = {};
    const positional: string[] = [];
    for (let i = 0; i < separator; i += 1) {
      const word = words[i]!;
      if (word === '-e' || word === '--env') {
        const [key, value] = envPair(words[++i], origin);
        env[key] = value;
      } else if (word === '-s' || word === '--scope') assert.ok(['user', 'project'].includes(words[++i] ?? ''), `${origin}: scope is user or project`);
      else if (word === '-t' || word === '--transport' || word === '--type')
        assert.equal(words[++i], 'stdio', `${origin}: a command needs the stdio transport`);
      else if (word === '--trust') continue;
      else if (word === '--timeout') assert.match(words[++i] ?? '', /^\d+$/, `${origin}: --timeout takes milliseconds`);
      else if (word.startsWith('-')) assert.fail(`${origin}: ${word} before -- would be read by gemini; server arguments starting with - go after --`);
      else positional.push(word);
    }
    const [name, command, ...args] = positional;
    assert.ok(name !== undefined && command !== undefined, `${origin}: a name and a command`);
    return { origin, heading: fence.heading, command, args: [...args, ...words.slice(separator + 1)], env };
  });
}

// `codex mcp add <name> [--env KEY=VALUE]... -- <command>...`
function codexCliSnippets(): ServerCommand[] {
  return shellLines('codex mcp add').map(({ fence, line }) => {
    const words = shellWords(line);
    const origin = `${fence.heading}: ${line}`;
    const separator = words.indexOf('--');
    assert.ok(separator > 0, `${origin}: the server command follows --`);
    assert.ok(!words[3]!.startsWith('-'), `${origin}: the server name comes right after "codex mcp add"`);
    const env: Record<string, string> = {};
    const options = words.slice(4, separator);
    for (let i = 0; i < options.length; i += 1) {
      assert.equal(options[i], '--env', `${origin}: unexpected ${options[i]} (allowed: --env KEY=VALUE)`);
      const [key, value] = envPair(options[++i], origin);
      env[key] = value;
    }
    const [command, ...args] = words.slice(separator + 1);
    return { origin, heading: fence.heading, command: command!, args, env };
  });
}

interface JsonServer {
  type?: string;
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

// Claude Desktop and Cursor: a top-level `mcpServers` object. VS Code: a top-level `servers` object whose
// stdio entries say "type": "stdio", and an optional `inputs` array for prompted values.
function jsonSnippets(): ServerCommand[] {
  const commands: ServerCommand[] = [];
  for (const fence of fences(ideSection)) {
    if (fence.lang !== 'json') continue;
    const config = JSON.parse(fence.body) as { mcpServers?: Record<string, JsonServer>; servers?: Record<string, JsonServer>; inputs?: { id: string }[] };
    if (config.servers !== undefined) {
      assert.equal(config.mcpServers, undefined, `${fence.heading}: VS Code reads "servers", not "mcpServers"`);
      for (const [name, entry] of Object.entries(config.servers)) {
        assert.equal(entry.type, 'stdio', `${fence.heading}: servers.${name} has "type": "stdio"`);
        commands.push({
          origin: `${fence.heading}: servers.${name}`,
          heading: fence.heading,
          command: entry.command,
          args: entry.args ?? [],
          env: entry.env ?? {},
          inputs: (config.inputs ?? []).map((i) => i.id),
        });
      }
    } else {
      assert.ok(config.mcpServers !== undefined, `${fence.heading}: a JSON snippet has mcpServers or servers`);
      for (const [name, entry] of Object.entries(config.mcpServers)) {
        commands.push({
          origin: `${fence.heading}: mcpServers.${name}`,
          heading: fence.heading,
          command: entry.command,
          args: entry.args ?? [],
          env: entry.env ?? {},
        });
      }
    }
  }
  return commands;
}

// Codex's config.toml: [mcp_servers.<name>] with command, args, env.
function tomlSnippets(): ServerCommand[] {
  const commands: ServerCommand[] = [];
  for (const fence of fences(ideSection)) {
    if (fence.lang !== 'toml') continue;
    const config = parseToml(fence.body) as {
      mcp_servers?: Record<string, { command: string; args?: string[]; env?: Record<string, string>; startup_timeout_sec?: number }>;
    };
    assert.ok(config.mcp_servers !== undefined, `${fence.heading}: a TOML snippet has [mcp_servers.<name>]`);
    for (const [name, entry] of Object.entries(config.mcp_servers)) {
      if (entry.startup_timeout_sec !== undefined) assert.equal(typeof entry.startup_timeout_sec, 'number');
      commands.push({
        origin: `${fence.heading}: mcp_servers.${name}`,
        heading: fence.heading,
        command: entry.command,
        args: entry.args ?? [],
        env: entry.env ?? {},
      });
    }
  }
  return commands;
}

const snippets = [...claudeCodeSnippets(), ...jsonSnippets(), ...geminiSnippets(), ...codexCliSnippets(), ...tomlSnippets()];
const viaNpx = (s: ServerCommand): boolean => s.command === 'npx';
/** The tarball route: `symbi-mcp` on the PATH after `npm install --global <tarball>`. */
const viaGlobalInstall = (s: ServerCommand): boolean => s.command === 'symbi-mcp';
const tarballSection = /\n### From a packed tarball instead of npx\n([\s\S]*?)\n### /.exec(readme)?.[1] ?? '';
const manifestVersion = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

/** Replaces the placeholders and the variables each client expands itself (${VAR}, $VAR, ${input:id}, ${workspaceFolder}). */
function resolve(text: string, snippet: ServerCommand, project: string): string {
  return text
    .split(REPO_PLACEHOLDER)
    .join(repoRoot)
    .split(PROJECT_PLACEHOLDER)
    .join(project)
    .replace(/\$\{input:([^}]+)\}/g, (_, id: string) => {
      assert.ok(snippet.inputs?.includes(id), `${snippet.origin}: \${input:${id}} is declared in "inputs"`);
      return EXPANDED_VALUE;
    })
    .replace(/\$\{workspaceFolder\}/g, project)
    .replace(/\$\{[A-Z_][A-Z0-9_]*(?::-[^}]*)?\}|\$[A-Z_][A-Z0-9_]*/g, EXPANDED_VALUE);
}

describe('README configuration snippets', { timeout: 300_000 }, () => {
  let project: string;
  let npxFolder: string;
  /** The prefix the README's `npm install --global ./symbi-mcp-<version>.tgz` installed into. */
  let globalPrefix: string | undefined;

  before(async () => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-readme-'));
    fs.mkdirSync(path.join(project, 'agents'));
    fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n  capabilities = ["answer"]\n}\n');
    if (snippets.some(viaNpx)) npxFolder = (await installedPackage()).dir;
  });

  after(() => {
    fs.rmSync(project, { recursive: true, force: true });
    if (globalPrefix !== undefined) fs.rmSync(globalPrefix, { recursive: true, force: true });
  });

  it('says the package is not on the public registry yet, next to the npx command', () => {
    const npxLine = ideSection.indexOf('npx -y symbi-mcp mcp --project');
    const notice = ideSection.indexOf('not on the public npm registry yet');
    assert.ok(npxLine >= 0 && notice > npxLine && notice - npxLine < 300, 'the notice follows the npx command');
    for (const anchor of ['#from-a-clone-instead-of-npx', '#from-a-packed-tarball-instead-of-npx'])
      assert.ok(ideSection.includes(`(${anchor})`), `links ${anchor}`);
  });

  it('the packed-tarball route installs as written and puts symbi-mcp on the PATH', { timeout: 240_000 }, async () => {
    const block = fences(tarballSection).find((f) => f.body.includes('npm install --global'));
    assert.ok(block, 'a block with the npm install --global step');
    const lines = block.body.trim().split('\n');
    assert.deepEqual(
      lines,
      ['npm ci && npm pack', `npm install --global ./symbi-mcp-${manifestVersion}.tgz`],
      "npm pack names the tarball after package.json's version",
    );
    // `npm ci && npm pack` is what test/support/packed-package.ts does; the install runs as written,
    // from the folder holding the tarball, into a scratch global prefix.
    const tarball = (await installedPackage()).tarball;
    globalPrefix = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-global-'));
    const words = shellWords(lines[1]!);
    await promisify(execFile)(words[0]!, words.slice(1), {
      cwd: path.dirname(tarball),
      env: { ...cleanEnv(), npm_config_prefix: globalPrefix },
      timeout: 200_000,
    });
    assert.ok(fs.existsSync(path.join(globalPrefix, 'bin', 'symbi-mcp')), 'npm linked bin/symbi-mcp in the global prefix');
    assert.ok(snippets.some(viaGlobalInstall), 'a snippet that runs symbi-mcp from the PATH');
  });

  it('the quick start is exactly the two commands', () => {
    const quickStart = /## Quick start\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    const block = fences(quickStart)[0];
    assert.ok(block, 'a code block under ## Quick start');
    assert.deepEqual(block.body.trim().split('\n'), ['npm run demo', 'npm test']);
  });

  it('has an npx snippet for every major client, and the clone route as an alternative', () => {
    for (const client of ['Claude Code', 'Claude Desktop', 'Cursor', 'VS Code', 'Gemini CLI', 'Codex CLI']) {
      const found = snippets.filter((s) => s.heading === client && viaNpx(s));
      assert.ok(found.length >= 1, `an npx snippet under ### ${client}`);
      for (const s of found) assert.deepEqual(s.args.slice(0, 3), ['-y', 'symbi-mcp', 'mcp'], `${s.origin}: npx -y symbi-mcp mcp`);
    }
    assert.equal(snippets.filter((s) => s.heading === 'Codex CLI').length, 2, 'Codex CLI: the codex mcp add line and the config.toml entry');
    const clone = snippets.filter((s) => s.command === 'node');
    assert.ok(clone.length >= 1, 'a clone-route snippet (node .../bin/symbi.js)');
    for (const s of clone) assert.equal(s.args[0], `${REPO_PLACEHOLDER}/bin/symbi.js`, `${s.origin}: starts the clone's bin/symbi.js`);
  });

  it('states the size of the packed tarball', async () => {
    const stated = Number(/\b(\d+) kB tarball\b/.exec(ideSection)?.[1]);
    assert.ok(stated > 0, 'the section states the tarball size in kB');
    // Within 15%: the README itself is in the tarball, so every edit moves the size a little.
    const actual = fs.statSync((await installedPackage()).tarball).size / 1000;
    assert.ok(Math.abs(actual - stated) <= actual * 0.15, `the README says ${stated} kB; npm pack made ${actual.toFixed(1)} kB`);
  });

  for (const snippet of snippets) {
    it(`starts and answers initialize + tools/list: ${snippet.origin}`, async () => {
      const args = snippet.args.map((a) => resolve(a, snippet, project));
      const env = Object.fromEntries(Object.entries(snippet.env).map(([k, v]) => [k, resolve(v, snippet, project)]));
      assert.ok(!args.some((a) => a.includes('/abs/path')), `every placeholder path is one this test knows: ${args.join(' ')}`);
      assert.deepEqual(args.slice(args.indexOf('mcp'), args.indexOf('mcp') + 3), ['mcp', '--project', project]);
      const transport = new StdioClientTransport({
        command: snippet.command,
        args,
        // The snippet's own env, plus the PATH an IDE would give (with this node, npm and npx first); no keys of ours.
        env: {
          PATH: [
            ...(viaGlobalInstall(snippet) ? [path.join(globalPrefix ?? assert.fail('the tarball-route test runs first'), 'bin')] : []),
            path.dirname(process.execPath),
            process.env.PATH ?? '',
          ].join(path.delimiter),
          HOME: process.env.HOME ?? os.tmpdir(),
          ...env,
        },
        cwd: viaNpx(snippet) ? npxFolder : project,
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const client = new Client({ name: 'readme-snippet-test', version: '0.0.0' });
      try {
        await client.connect(transport);
        assert.equal(client.getServerVersion()?.name, 'symbi-mcp');
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
        assert.match(stderr, new RegExp(`project pinned: ${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
        if (viaNpx(snippet)) {
          // The server npx started is the one in the installed tarball, not this repository's.
          const pid = transport.pid;
          assert.ok(pid !== null && pid !== undefined);
          assert.ok(serverFromTarball(pid, npxFolder), `npx ran node_modules/symbi-mcp of ${npxFolder}`);
        }
      } finally {
        await client.close().catch(() => undefined);
      }
    });
  }
});

/** Whether the process tree under `pid` runs the symbi-mcp package installed in `folder` (Linux /proc). */
function serverFromTarball(pid: number, folder: string): boolean {
  const installed = fs.realpathSync(path.join(folder, 'node_modules', 'symbi-mcp'));
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Fields after the parenthesised command name: state, then the parent pid.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // The process ended meanwhile.
    }
  }
  const inTree = (candidate: number): boolean => {
    for (let current: number | undefined = candidate; current !== undefined && current > 1; current = parents.get(current)) if (current === pid) return true;
    return false;
  };
  for (const candidate of parents.keys()) {
    if (!inTree(candidate)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${candidate}/cmdline`, 'utf8').split('\0');
      if (cmdline.some((arg) => arg.startsWith(installed) || arg === path.join(folder, 'node_modules', '.bin', 'symbi-mcp'))) return true;
    } catch {
      // The process ended meanwhile.
    }
  }
  return false;
}

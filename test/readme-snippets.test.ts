import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// The README's IDE configuration snippets are what people paste: every `mcpServers` JSON block and every
// `claude mcp add` line is parsed here, its placeholder paths replaced with this repository and a
// temporary project, and the command it names is started and asked for initialize + tools/list.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const REPO_PLACEHOLDER = '/abs/path/to/symbi-mcp';
const PROJECT_PLACEHOLDER = '/abs/path/to/project';
const EXPECTED_TOOLS = ['get_agent_dsl', 'get_agents_md', 'invoke_agent', 'list_agents', 'parse_dsl', 'verify_schema'];

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

interface ServerCommand {
  origin: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

function mcpServersSnippets(): ServerCommand[] {
  const commands: ServerCommand[] = [];
  for (const fence of fences(readme)) {
    if (fence.lang !== 'json' || !fence.body.includes('mcpServers')) continue;
    const config = JSON.parse(fence.body) as { mcpServers: Record<string, { command: string; args?: string[]; env?: Record<string, string> }> };
    for (const [name, entry] of Object.entries(config.mcpServers)) {
      commands.push({ origin: `${fence.heading}: mcpServers.${name}`, command: entry.command, args: entry.args ?? [], env: entry.env ?? {} });
    }
  }
  return commands;
}

function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}

function claudeCodeSnippets(): ServerCommand[] {
  const commands: ServerCommand[] = [];
  for (const fence of fences(readme)) {
    if (fence.lang !== 'sh' && fence.lang !== 'bash' && fence.lang !== 'shell') continue;
    for (const line of fence.body.split('\n')) {
      if (!line.trim().startsWith('claude mcp add')) continue;
      const words = shellWords(line.trim());
      const separator = words.indexOf('--');
      assert.ok(separator > 0, `a claude mcp add line separates its command with --: ${line}`);
      const options = words.slice(3, separator);
      const env: Record<string, string> = {};
      for (let i = 0; i < options.length; i += 1) {
        if (options[i] === '-e' || options[i] === '--env') {
          const [key, ...rest] = options[++i]!.split('=');
          env[key!] = rest.join('=');
        }
      }
      const [command, ...args] = words.slice(separator + 1);
      commands.push({ origin: `${fence.heading}: ${line.trim()}`, command: command!, args, env });
    }
  }
  return commands;
}

function substitute(text: string, project: string): string {
  return text.split(REPO_PLACEHOLDER).join(repoRoot).split(PROJECT_PLACEHOLDER).join(project);
}

describe('README configuration snippets', () => {
  let project: string;

  before(() => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-readme-'));
    fs.mkdirSync(path.join(project, 'agents'));
    fs.writeFileSync(path.join(project, 'agents', 'assistant.symbi'), 'agent assistant {\n  capabilities = ["answer"]\n}\n');
  });

  after(() => {
    fs.rmSync(project, { recursive: true, force: true });
  });

  it('the quick start is exactly the two commands', () => {
    const quickStart = /## Quick start\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    const block = fences(quickStart)[0];
    assert.ok(block, 'a code block under ## Quick start');
    assert.deepEqual(block.body.trim().split('\n'), ['npm run demo', 'npm test']);
  });

  it('has a Claude Code line and mcpServers blocks for Claude Desktop and Cursor', () => {
    assert.ok(claudeCodeSnippets().length >= 1, 'a claude mcp add line');
    assert.ok(mcpServersSnippets().length >= 2, 'at least two mcpServers JSON blocks');
    assert.match(readme, /### Claude Desktop[\s\S]*?```json[\s\S]*?mcpServers/);
    assert.match(readme, /### Cursor[\s\S]*?```json[\s\S]*?mcpServers/);
  });

  for (const snippet of [...claudeCodeSnippets(), ...mcpServersSnippets()]) {
    it(`starts and answers initialize + tools/list: ${snippet.origin}`, async () => {
      const args = snippet.args.map((a) => substitute(a, project));
      assert.ok(!args.some((a) => a.includes('/abs/path')), `every placeholder path is one this test knows: ${args.join(' ')}`);
      assert.ok(args.includes(path.join(repoRoot, 'bin', 'symbi.js')), 'the snippet starts this repository’s bin/symbi.js');
      assert.deepEqual(args.slice(args.indexOf('mcp'), args.indexOf('mcp') + 3), ['mcp', '--project', project]);
      const transport = new StdioClientTransport({
        command: snippet.command,
        args,
        // The snippet's own env, plus the PATH an IDE would give (with this node first); no keys of ours.
        env: { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? os.tmpdir(), ...snippet.env },
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
      } finally {
        await client.close().catch(() => undefined);
      }
    });
  }
});

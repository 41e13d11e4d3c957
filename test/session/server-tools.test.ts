import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeProject, removeProject } from '../support/project.js';
import { type InProcessServer, startInProcessServer } from '../support/in-process-server.js';
import { textOf, waitForStderr } from '../support/server.js';

// The session served in process (test/support/in-process-server.ts) with the SDK client: every
// project tool, the AGENTS.md resource and the startup summary in the operator log. The stdio
// boundary itself is test/process/server-stdio.test.ts's.

const ASSISTANT = 'agent assistant {\n}\n';
const HELPER = '// one agent under another name: a filename alias\nagent concierge {\n}\n';
const MULTI = 'agent a {\n}\n\nagent b {\n}\n\nschedule nightly {\n  cron = "0 0 * * *"\n  agent = "a"\n}\n';
const CHAT = 'agent chat {\n}\n\nchannel support {\n  platform = "slack"\n  default_agent = "chat"\n}\n';
const BROKEN = 'agent broken {\n  capabilities = ["read"\n';
const AGENTS_MD = '# Project notes\n\nFor people only.\n\n<!-- agents-md:auto-start -->\nAnswer briefly.\n<!-- agents-md:auto-end -->\n';

describe('symbi mcp project tools over stdio', () => {
  let project: string;
  let server: InProcessServer;

  before(async () => {
    project = makeProject({
      'agents/assistant.symbi': ASSISTANT,
      'agents/helper.symbi': HELPER,
      'agents/multi.dsl': MULTI,
      'agents/chat.symbi': CHAT,
      'agents/broken.symbi': BROKEN,
      'agents/dup.symbi': ASSISTANT,
      'agents/dup.dsl': ASSISTANT,
      'agents/notes.txt': 'not an agent source',
      'AGENTS.md': AGENTS_MD,
    });
    server = await startInProcessServer(project);
  });

  after(async () => {
    await server.close();
    removeProject(project);
  });

  it('writes a startup summary on stderr', async () => {
    const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
    assert.match(stderr, new RegExp(`project pinned: ${fs.realpathSync(project).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.match(stderr, /agents: 7 found, \d+ invocable, 0 left out/);
    assert.match(stderr, /agent assistant \(agents\/assistant\.symbi\): invocable/);
    assert.match(stderr, /agents\/multi\.dsl\): not invocable: /);
    assert.match(stderr, /agents\/broken\.symbi\): not invocable: /);
    assert.match(stderr, /limits hit: none/);
    assert.match(stderr, /AGENTS\.md: \d+ bytes, generated section 15 characters/);
    assert.match(stderr, /policy: /);
    assert.match(stderr, /audit public key \(record it to verify journals\): [0-9a-f]{64}/);
    assert.match(stderr, /provider: none usable: no model provider is configured \(set OPENAI_API_KEY/);
    assert.ok(!stderr.includes('Answer briefly'), 'guidance text is not logged');
  });

  it('advertises read-only tools with JSON input schemas', async () => {
    const { tools } = await server.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['list_agents', 'get_agent_dsl', 'parse_dsl', 'get_agents_md']) {
      const tool = byName.get(name);
      assert.ok(tool, `${name} is listed`);
      assert.ok(tool.description && tool.description.length > 20, `${name} has a description`);
      assert.equal(tool.annotations?.readOnlyHint, true);
      assert.equal(tool.annotations?.openWorldHint, false);
      assert.equal(tool.inputSchema.type, 'object');
    }
    assert.deepEqual(byName.get('get_agent_dsl')!.inputSchema.required, ['agent']);
    assert.equal((byName.get('get_agent_dsl')!.inputSchema.properties as Record<string, { type: string }>).agent!.type, 'string');
    const parseProps = byName.get('parse_dsl')!.inputSchema.properties as Record<string, { type: string }>;
    assert.equal(parseProps.file!.type, 'string');
    assert.equal(parseProps.content!.type, 'string');
  });

  it('list_agents lists every registry entry', async () => {
    const result = await server.call('list_agents', {});
    assert.equal(result.isError, undefined);
    const data = result.structuredContent as { agents: Array<Record<string, unknown>>; left_out: unknown[] };
    assert.deepEqual(JSON.parse(textOf(result)), data);
    const byFile = new Map(data.agents.map((a) => [a.file as string, a]));
    assert.deepEqual([...byFile.keys()].sort(), [
      'agents/assistant.symbi',
      'agents/broken.symbi',
      'agents/chat.symbi',
      'agents/dup.dsl',
      'agents/dup.symbi',
      'agents/helper.symbi',
      'agents/multi.dsl',
    ]);
    const assistant = byFile.get('agents/assistant.symbi')!;
    assert.equal(assistant.stem, 'assistant');
    assert.deepEqual(assistant.declared_agents, ['assistant']);
    assert.equal(assistant.invocable, true);
    assert.equal(assistant.has_schedules, false);
    assert.equal(assistant.has_channels, false);
    const helper = byFile.get('agents/helper.symbi')!;
    assert.equal(helper.invocable, true);
    assert.equal(helper.declared_name, 'concierge');
    const multi = byFile.get('agents/multi.dsl')!;
    assert.deepEqual(multi.declared_agents, ['a', 'b']);
    assert.equal(multi.invocable, false);
    assert.equal(typeof multi.reason, 'string');
    assert.equal(multi.has_schedules, true);
    assert.equal(byFile.get('agents/chat.symbi')!.has_channels, true);
    const broken = byFile.get('agents/broken.symbi')!;
    assert.equal(broken.invocable, false);
    assert.ok((broken.reason as string).length > 0);
    assert.deepEqual(data.left_out, []);
  });

  it('get_agent_dsl returns the source from the startup snapshot', async () => {
    const result = await server.call('get_agent_dsl', { agent: 'assistant' });
    assert.equal(result.isError, undefined);
    assert.equal(textOf(result), ASSISTANT);
    assert.deepEqual(result.structuredContent, { agent: 'assistant', file: 'agents/assistant.symbi', source: ASSISTANT });
    // Changes after startup are not seen: the registry is a snapshot.
    fs.writeFileSync(path.join(project, 'agents', 'late.symbi'), ASSISTANT);
    const late = await server.call('get_agent_dsl', { agent: 'late' });
    assert.equal(late.isError, true);
    assert.match(textOf(late), /unknown agent "late"; available: .*assistant/);
  });

  it('get_agent_dsl refuses unknown, ambiguous and malformed names with one line', async () => {
    const cases: Array<[Record<string, unknown> | undefined, RegExp]> = [
      [{ agent: 'nobody' }, /^get_agent_dsl: unknown agent "nobody"; available: .*assistant/],
      [{ agent: 'dup' }, /ambiguous: agents\/dup\.dsl and agents\/dup\.symbi/],
      [{ agent: 7 }, /"agent" must be a string, got a number; expected the filename stem/],
      [{ agent: null }, /"agent" must be a string, got null/],
      [{ agent: ['assistant'] }, /"agent" must be a string, got an array/],
      [{}, /missing required argument "agent"/],
      [undefined, /missing required argument "agent"/],
      [{ agent: '' }, /"agent" is empty/],
      [{ agent: 'x'.repeat(300) }, /longer than 255 bytes/],
      [{ agent: 'assistant', extra: 1 }, /unknown argument "extra"; get_agent_dsl takes only "agent"/],
      [{ agent: 'a\nb' }, /unknown agent "a\\nb"/],
    ];
    for (const [args, pattern] of cases) {
      const result = await server.call('get_agent_dsl', args);
      assert.equal(result.isError, true, JSON.stringify(args));
      const text = textOf(result);
      assert.match(text, pattern);
      assert.ok(!text.includes('\n'), `one line: ${text}`);
    }
  });

  it('parse_dsl parses a project file read now and inline content', async () => {
    const fromFile = await server.call('parse_dsl', { file: 'agents/multi.dsl' });
    assert.equal(fromFile.isError, undefined);
    const report = fromFile.structuredContent as { source: string; has_errors: boolean; agents: Array<{ name: string }>; schedules: unknown[] };
    assert.deepEqual(JSON.parse(textOf(fromFile)), report);
    assert.equal(report.source, 'agents/multi.dsl');
    assert.equal(report.has_errors, false);
    assert.deepEqual(
      report.agents.map((a) => a.name),
      ['a', 'b'],
    );
    assert.equal(report.schedules.length, 1);

    // parse_dsl reads at call time, unlike the registry.
    fs.writeFileSync(path.join(project, 'agents', 'fresh.symbi'), 'agent fresh {\n}\n');
    const fresh = await server.call('parse_dsl', { file: './agents//fresh.symbi' });
    assert.deepEqual(
      (fresh.structuredContent as { agents: Array<{ name: string }> }).agents.map((a) => a.name),
      ['fresh'],
    );

    const inline = await server.call('parse_dsl', { content: BROKEN });
    assert.equal(inline.isError, undefined);
    const inlineReport = inline.structuredContent as { has_errors: boolean; errors: Array<{ line: number; column: number; message: string }> };
    assert.equal(inlineReport.has_errors, true);
    assert.ok(inlineReport.errors.length >= 1);
    assert.ok(inlineReport.errors[0]!.line >= 1);
  });

  it('parse_dsl refuses bad arguments with one line', async () => {
    const cases: Array<[Record<string, unknown> | undefined, RegExp]> = [
      [{}, /exactly one of "file".*"content".*neither was given/],
      [undefined, /neither was given/],
      [{ file: 'agents/assistant.symbi', content: 'agent x {}' }, /both were given/],
      [{ file: 3 }, /"file" must be a string, got a number/],
      [{ content: { a: 1 } }, /"content" must be a string, got a object/],
      [{ content: 'x'.repeat(1024 * 1024 + 1) }, /"content" is 1048577 bytes; expected DSL source text of at most 1048576 UTF-8 bytes/],
      [{ content: 'agent a {}\uD800' }, /unpaired UTF-16 surrogate/],
      [{ file: 'AGENTS.md' }, /must name a \.symbi or \.dsl file/],
      [{ file: 'agents/notes.txt' }, /must name a \.symbi or \.dsl file/],
      [{ file: 'agents/missing.symbi' }, /agents\/missing\.symbi: no such file in the project/],
      [{ file: 'agents/assistant.symbi', mode: 'x' }, /unknown argument "mode"/],
    ];
    for (const [args, pattern] of cases) {
      const result = await server.call('parse_dsl', args);
      assert.equal(result.isError, true, JSON.stringify(args)?.slice(0, 80));
      const text = textOf(result);
      assert.match(text, pattern);
      assert.ok(!text.includes('\n'), `one line: ${text.slice(0, 200)}`);
    }
    // Exactly at the limit is accepted.
    const atLimit = await server.call('parse_dsl', { content: `//${'x'.repeat(1024 * 1024 - 3)}\n` });
    assert.equal(atLimit.isError, undefined);
  });

  it('get_agents_md returns the file read at call time', async () => {
    const result = await server.call('get_agents_md', {});
    assert.equal(result.isError, undefined);
    assert.equal(textOf(result), AGENTS_MD);
    const extra = await server.call('get_agents_md', { path: 'x' });
    assert.equal(extra.isError, true);
    assert.match(textOf(extra), /unknown argument "path"; get_agents_md takes no arguments/);
  });

  it('serves AGENTS.md as the resource file:///AGENTS.md', async () => {
    const { resources } = await server.client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['file:///AGENTS.md'],
    );
    const read = await server.client.readResource({ uri: 'file:///AGENTS.md' });
    assert.equal(read.contents.length, 1);
    assert.equal((read.contents[0] as { text: string }).text, AGENTS_MD);
  });

  it('answers an unknown tool name with -32602 naming the tools, and keeps serving', async () => {
    // MCP's tools page lists an unknown tool among the protocol errors (-32602), not as a tool result.
    await assert.rejects(server.call('no_such_tool', {}), (error: Error & { code?: number }) => {
      assert.equal(error.code, -32602);
      assert.match(
        error.message,
        /unknown tool "no_such_tool"; the tools are get_agent_dsl, get_agents_md, invoke_agent, list_agents, parse_dsl, verify_schema$/,
      );
      return true;
    });
    const ok = await server.call('get_agent_dsl', { agent: 'assistant' });
    assert.equal(ok.isError, undefined);
  });
});

describe('symbi mcp without AGENTS.md or agents/', () => {
  it('does not list the resource and says AGENTS.md does not exist', async () => {
    const project = makeProject({ 'README.txt': 'empty project' });
    const server = await startInProcessServer(project);
    try {
      const { resources } = await server.client.listResources().catch(() => ({ resources: [] }));
      assert.deepEqual(resources, []);
      const md = await server.call('get_agents_md');
      assert.equal(md.isError, true);
      assert.equal(textOf(md), 'get_agents_md: AGENTS.md does not exist in the project');
      const list = await server.call('list_agents');
      assert.deepEqual((list.structuredContent as { agents: unknown[] }).agents, []);
      const unknown = await server.call('get_agent_dsl', { agent: 'x' });
      assert.match(textOf(unknown), /available: none/);
      const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
      assert.match(stderr, /no agents\/ in /);
      assert.match(stderr, /AGENTS\.md: not present/);
    } finally {
      await server.close();
      removeProject(project);
    }
  });
});

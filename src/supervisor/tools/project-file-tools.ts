import { ProtocolError, ProtocolErrorCode, type CallToolResult, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { AGENT_NAME_MAX_BYTES, AGENTS_MD_MAX_BYTES, DSL_FILE_MAX_BYTES } from '../../shared/limits.js';
import { ConfinementError, projectFilesUnavailable, projectPathComponents } from '../../shared/confinement/index.js';
import { parseReportSchema } from '../../shared/dsl/parse-report-schema.js';
import { AGENT_REFUSAL_KINDS, agentStandings, refusalText } from '../runs/agent-refusal.js';
import { sourceStem } from '../startup/agent-discovery.js';
import { noAgentsFolderMessage } from '../startup/nearest-project.js';
import type { SessionContext } from '../startup/session-context.js';
import { ToolArgumentError, advertisedInputSchema, argumentObject, guarded, jsonResult, quoteForMessage, requiredString, toolError } from './tool-arguments.js';

// The read-only project tools: list_agents and get_agent_dsl answer from the
// startup snapshot; parse_dsl, get_agents_md and the AGENTS.md resource read
// the project now, through the pinned directory and its confinement rules.

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
const CANDIDATES_SHOWN = 20;
const AGENTS_MD_RESOURCE_URI = 'file:///AGENTS.md';
const INLINE_SOURCE = '<inline>';

/** The refusal every file tool gives when project files cannot be read at all (confinement/route-choice.ts). */
function projectUnavailable(tool: string, context: SessionContext) {
  const access = context.snapshot.projectAccess;
  return access.available ? null : toolError(`${tool}: ${projectFilesUnavailable(access.reason)}`);
}

function listCandidates(names: readonly string[]): string {
  if (names.length === 0) return 'none (agents/ holds no readable .symbi or .dsl files)';
  const shown = names.slice(0, CANDIDATES_SHOWN).join(', ');
  return names.length > CANDIDATES_SHOWN ? `${shown} and ${names.length - CANDIDATES_SHOWN} more` : shown;
}

// Output schemas: each result below is typed from its schema, the SDK checks
// every result against it before sending, and clients receive it as the tool's
// outputSchema, so the declared shape and the built one are the same source.

const agentEntryCommon = {
  stem: z.string().describe('Filename stem: the name invoke_agent and get_agent_dsl take'),
  file: z.string().describe('Project-relative path of the source'),
  declared_agents: z.array(z.string()),
  has_schedules: z.boolean(),
  has_channels: z.boolean(),
};

const listAgentsOutput = z.object({
  agents: z.array(
    z.discriminatedUnion('invocable', [
      z.object({ ...agentEntryCommon, invocable: z.literal(true), declared_name: z.string().describe('The declared agent an invocation runs as') }),
      z.object({
        ...agentEntryCommon,
        invocable: z.literal(false),
        refusal: z.enum(AGENT_REFUSAL_KINDS).describe('The kind of refusal invoke_agent gives this stem (docs/check.md)'),
        reason: z.string().describe('Why invoke_agent refuses this file, word for word'),
      }),
    ]),
  ),
  left_out: z.array(z.object({ file: z.string(), reason: z.string() })).describe('Files in agents/ not read at startup, with the reason'),
  limits_hit: z.array(z.string()).describe('Discovery limits reached at startup'),
  note: z.string().optional().describe('Why the list is empty, when it is'),
});

const getAgentDslOutput = z.object({
  agent: z.string().describe('The filename stem asked for'),
  file: z.string().describe('Project-relative path of the source'),
  source: z.string().describe('The source text as read at startup'),
});

function registerListAgents(server: McpServer, context: SessionContext): void {
  server.registerTool(
    'list_agents',
    {
      title: 'List agents',
      description:
        'Lists every agent source found in agents/ when the server started: its file, the agents it declares, whether invoke_agent can run it (and why not), and whether it has schedules or channels. Files left out at startup are listed with the reason.',
      inputSchema: advertisedInputSchema({}, []),
      outputSchema: listAgentsOutput,
      annotations: READ_ONLY,
    },
    guarded(
      'list_agents',
      async (raw: unknown) => {
        argumentObject('list_agents', raw, []);
        const unavailable = projectUnavailable('list_agents', context);
        if (unavailable) return unavailable;
        const { snapshot } = context;
        const analysis = await context.sourceAnalysis();
        // What invoke_agent would answer for each stem whatever the call, as `symbi check` reports it (agent-refusal.ts).
        const standings = await agentStandings({ projectAccess: snapshot.projectAccess, policySet: snapshot.policy.set }, analysis.agents);
        const result: z.infer<typeof listAgentsOutput> = {
          agents: standings.map((standing) => {
            const a = standing.summary;
            const common = { stem: a.stem, file: a.file, declared_agents: a.declared_agents };
            const flags = { has_schedules: a.has_schedules, has_channels: a.has_channels };
            return standing.refusal === undefined
              ? { ...common, invocable: true as const, declared_name: standing.declaredName, ...flags }
              : { ...common, invocable: false as const, refusal: standing.refusal.kind, reason: refusalText(standing.refusal), ...flags };
          }),
          left_out: analysis.skipped.map((s) => ({ file: s.file, reason: s.reason })),
          limits_hit: [...snapshot.limitsHit],
        };
        if (result.agents.length === 0 && result.left_out.length === 0) {
          const dir = snapshot.agentsDirectory;
          result.note = dir.problem ?? (dir.present ? 'agents/ holds no .symbi or .dsl file' : noAgentsFolderMessage(snapshot.project.path));
        }
        return jsonResult(result);
      },
      (err) => context.log.error('list_agents failed unexpectedly', { event: 'tool.internal_error', error: String(err) }),
    ),
  );
}

function registerGetAgentDsl(server: McpServer, context: SessionContext): void {
  const allowedAgent = `the filename stem of an agent source listed by list_agents (at most ${AGENT_NAME_MAX_BYTES} bytes)`;
  server.registerTool(
    'get_agent_dsl',
    {
      title: 'Get agent source',
      description:
        'Returns the DSL source of the agent file whose filename stem is `agent` (agents/<agent>.symbi or agents/<agent>.dsl), as read when the server started.',
      inputSchema: advertisedInputSchema(
        { agent: { type: 'string', description: 'Filename stem of the agent source, e.g. "assistant" for agents/assistant.symbi' } },
        ['agent'],
      ),
      outputSchema: getAgentDslOutput,
      annotations: READ_ONLY,
    },
    guarded(
      'get_agent_dsl',
      (raw: unknown) => {
        const args = argumentObject('get_agent_dsl', raw, ['agent']);
        const agent = requiredString('get_agent_dsl', args, 'agent', allowedAgent);
        if (agent.length === 0) throw new ToolArgumentError(`get_agent_dsl: "agent" is empty; expected ${allowedAgent}`);
        if (Buffer.byteLength(agent, 'utf8') > AGENT_NAME_MAX_BYTES) {
          throw new ToolArgumentError(`get_agent_dsl: "agent" is longer than ${AGENT_NAME_MAX_BYTES} bytes; expected ${allowedAgent}`);
        }
        const unavailable = projectUnavailable('get_agent_dsl', context);
        if (unavailable) return unavailable;
        const registry = context.snapshot.registry;
        const matches = registry.filter((e) => e.stem === agent);
        if (matches.length === 0) {
          const stems = [...new Set(registry.map((e) => e.stem))];
          return toolError(`get_agent_dsl: unknown agent ${quoteForMessage(agent)}; available: ${listCandidates(stems)}`);
        }
        if (matches.length > 1) {
          return toolError(
            `get_agent_dsl: agent ${quoteForMessage(agent)} is ambiguous: ${matches.map((m) => m.file).join(' and ')} share that stem; rename one of them`,
          );
        }
        const entry = matches[0]!;
        const result: z.infer<typeof getAgentDslOutput> = { agent: entry.stem, file: entry.file, source: entry.text };
        return { content: [{ type: 'text', text: entry.text }], structuredContent: result };
      },
      (err) => context.log.error('get_agent_dsl failed unexpectedly', { event: 'tool.internal_error', error: String(err) }),
    ),
  );
}

function registerParseDsl(server: McpServer, context: SessionContext): void {
  const allowedFile =
    'a project-relative .symbi or .dsl path such as "agents/assistant.symbi" (no leading "/", no "..", no hidden names, no backslashes, not under policies/)';
  const allowedContent = `DSL source text of at most ${DSL_FILE_MAX_BYTES} UTF-8 bytes`;
  const exactlyOne = 'parse_dsl: give exactly one of "file" (a project-relative .symbi or .dsl path) or "content" (inline DSL text)';
  server.registerTool(
    'parse_dsl',
    {
      title: 'Parse DSL',
      description: `Parses Symbiont DSL and returns the parse report (agents, policies, schedules, channels, memory and webhook blocks, syntax errors with line and column, and the checks Symbiont applies when it extracts them). Give exactly one of: "file", a project-relative .symbi/.dsl path read now through the pinned project directory, or "content", inline DSL text. Both are limited to ${DSL_FILE_MAX_BYTES} bytes.`,
      inputSchema: advertisedInputSchema(
        {
          file: { type: 'string', description: 'Project-relative path of a .symbi or .dsl file, e.g. "agents/assistant.symbi"' },
          content: { type: 'string', description: `Inline DSL source (at most ${DSL_FILE_MAX_BYTES} UTF-8 bytes)` },
        },
        [],
      ),
      outputSchema: parseReportSchema,
      annotations: READ_ONLY,
    },
    guarded(
      'parse_dsl',
      async (raw: unknown) => {
        const args = argumentObject('parse_dsl', raw, ['file', 'content']);
        const hasFile = args.file !== undefined;
        const hasContent = args.content !== undefined;
        if (hasFile === hasContent) throw new ToolArgumentError(`${exactlyOne}; ${hasFile ? 'both were given' : 'neither was given'}`);
        if (hasContent) {
          const content = requiredString('parse_dsl', args, 'content', allowedContent);
          // JSON strings can carry unpaired surrogates, which have no UTF-8 encoding.
          if (!content.isWellFormed()) throw new ToolArgumentError(`parse_dsl: "content" contains an unpaired UTF-16 surrogate; expected valid Unicode text`);
          const bytes = Buffer.byteLength(content, 'utf8');
          if (bytes > DSL_FILE_MAX_BYTES) throw new ToolArgumentError(`parse_dsl: "content" is ${bytes} bytes; expected ${allowedContent}`);
          return analysedReport(context, content, INLINE_SOURCE);
        }
        const file = requiredString('parse_dsl', args, 'file', allowedFile);
        let components: string[];
        try {
          components = projectPathComponents(file);
        } catch (err) {
          if (err instanceof ConfinementError) throw new ToolArgumentError(`parse_dsl: ${err.message}`);
          throw err;
        }
        if (sourceStem(components[components.length - 1]!) === null) {
          throw new ToolArgumentError(`parse_dsl: "file" must name a .symbi or .dsl file; expected ${allowedFile}`);
        }
        let text: string;
        try {
          text = context.project.readTextFile(file, DSL_FILE_MAX_BYTES).text;
        } catch (err) {
          if (err instanceof ConfinementError) return toolError(`parse_dsl: ${err.message}`);
          throw err;
        }
        return analysedReport(context, text, file);
      },
      (err) => context.log.error('parse_dsl failed unexpectedly', { event: 'tool.internal_error', error: String(err) }),
    ),
  );
}

/** The parse report of `text`, worked out in the DSL analysis thread within its budget; otherwise one line saying why not. */
async function analysedReport(context: SessionContext, text: string, source: string): Promise<CallToolResult> {
  const outcome = await context.dslAnalysis.run({ kind: 'report', text, source });
  if (!outcome.ok) return toolError(`parse_dsl: ${source}: ${outcome.message}`);
  // The thread sends the answer's text, already measured against the answer limit; the structured copy is the same JSON.
  return { content: [{ type: 'text', text: outcome.value }], structuredContent: JSON.parse(outcome.value) as Record<string, unknown> };
}

function readAgentsMdNow(context: SessionContext): { text: string } | { error: string; missing: boolean } {
  try {
    return { text: context.project.readTextFile('AGENTS.md', AGENTS_MD_MAX_BYTES).text };
  } catch (err) {
    if (err instanceof ConfinementError) {
      if (err.code === 'not_found') return { error: 'AGENTS.md does not exist in the project', missing: true };
      return { error: err.message, missing: false };
    }
    throw err;
  }
}

function registerGetAgentsMd(server: McpServer, context: SessionContext): void {
  server.registerTool(
    'get_agents_md',
    {
      title: 'Get AGENTS.md',
      description: `Returns the project's AGENTS.md (at most ${AGENTS_MD_MAX_BYTES} bytes), read now through the pinned project directory.`,
      inputSchema: advertisedInputSchema({}, []),
      annotations: READ_ONLY,
    },
    guarded(
      'get_agents_md',
      (raw: unknown) => {
        argumentObject('get_agents_md', raw, []);
        const read = readAgentsMdNow(context);
        if ('error' in read) return toolError(`get_agents_md: ${read.error}`);
        return { content: [{ type: 'text', text: read.text }] };
      },
      (err) => context.log.error('get_agents_md failed unexpectedly', { event: 'tool.internal_error', error: String(err) }),
    ),
  );
}

function registerAgentsMdResource(server: McpServer, context: SessionContext): void {
  // Listed when AGENTS.md was present and readable at startup, and also when the
  // project could not be read at all: reading it then gives the reason, where an
  // unlisted resource would read as "this project has no AGENTS.md".
  const access = context.snapshot.projectAccess;
  if (!context.snapshot.agentsMd.present && access.available) return;
  server.registerResource(
    'AGENTS.md',
    AGENTS_MD_RESOURCE_URI,
    { title: 'AGENTS.md', description: 'Guidance for agents working in this project', mimeType: 'text/markdown' },
    () => {
      if (!access.available) throw new ProtocolError(ProtocolErrorCode.InternalError, `AGENTS.md: ${projectFilesUnavailable(access.reason)}`);
      const read = readAgentsMdNow(context);
      if ('error' in read) throw new ProtocolError(ProtocolErrorCode.InvalidParams, read.error);
      return { contents: [{ uri: AGENTS_MD_RESOURCE_URI, mimeType: 'text/markdown', text: read.text }] };
    },
  );
}

export function registerProjectFileTools(server: McpServer, context: SessionContext): void {
  registerListAgents(server, context);
  registerGetAgentDsl(server, context);
  registerParseDsl(server, context);
  registerGetAgentsMd(server, context);
  registerAgentsMdResource(server, context);
}

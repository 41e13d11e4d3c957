import type { CallToolResult, McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { AGENT_NAME_MAX_BYTES, PROMPT_MAX_BYTES, SYSTEM_PROMPT_MAX_BYTES } from '../../shared/limits.js';
import { createRunService, type InvokeAgentSession, type InvokeReport, type RunService } from '../runs/run-service.js';
import { declareStringArguments, guarded, sizeWords } from './tool-arguments.js';

// invoke_agent as an MCP tool: its arguments and result declared once, the call handed to the run
// service (runs/run-service.ts), which admits it, runs it and reports how it ended.

const TOOL = 'invoke_agent';

// The one declaration of the arguments: the advertised schema and the handler's checks (one-line
// errors, unknown names refused, sizes checked before any journal) both come from it.
const invokeArguments = declareStringArguments(TOOL, {
  agent: {
    description: 'Filename stem of a registered agent, e.g. "assistant" for agents/assistant.symbi',
    required: true,
    allowed: `the filename stem of an agents/*.symbi or *.dsl file (at most ${AGENT_NAME_MAX_BYTES} bytes)`,
    minBytes: 1,
    maxBytes: AGENT_NAME_MAX_BYTES,
  },
  prompt: { description: 'The caller input', required: true, allowed: `a string of at most ${sizeWords(PROMPT_MAX_BYTES)}`, maxBytes: PROMPT_MAX_BYTES },
  system_prompt: {
    description: 'Optional extra caller instructions, sent as a user message after the definition',
    required: false,
    allowed: `a string of at most ${sizeWords(SYSTEM_PROMPT_MAX_BYTES)}`,
    maxBytes: SYSTEM_PROMPT_MAX_BYTES,
  },
});

// The structured result, on success and on errors after the journal opened; both are typed from
// this schema, which is also the advertised outputSchema. It repeats the words of `content` because
// some clients (Claude Code, Codex) show their model structuredContent alone when it is present
// (docs/clients.md).
const invokeAgentOutput = z.object({
  agent_id: z.string().describe('The principal UUID the response was produced under'),
  audit: z
    .object({
      run_id: z.string(),
      path: z.string().describe('Absolute path of the signed journal of this run'),
      public_key: z.string().describe('Hex Ed25519 public key that verifies the journal'),
    })
    .describe('Reference to the signed journal of this invocation'),
  response: z.string().optional().describe('The released answer, the same text as content; present when the call succeeded'),
  error: z
    .object({
      kind: z
        .string()
        .describe('Why the run ended without an answer: policy_denied, tool_call_withheld, finish_<reason>, provider_http_<status>, cancelled, ...'),
      message: z.string().describe('The same words as content'),
    })
    .optional()
    .describe('Present when the call failed (isError): no answer was released'),
});
type InvokeAgentOutput = z.infer<typeof invokeAgentOutput>;

/** The report of the run service as an MCP tool result; structuredContent repeats the words of content. */
function toolResult(report: InvokeReport): CallToolResult {
  switch (report.kind) {
    case 'answered': {
      const structuredContent: InvokeAgentOutput = { agent_id: report.agentId, audit: report.audit, response: report.text };
      return { content: [{ type: 'text', text: report.text }], structuredContent };
    }
    case 'refused':
      return { isError: true, content: [{ type: 'text', text: `invoke_agent refused: ${report.message}` }] };
    case 'failed': {
      const text = `invoke_agent failed: ${report.message} (audit: run ${report.audit.run_id}, journal ${report.audit.path})`;
      const structuredContent: InvokeAgentOutput = { agent_id: report.agentId, audit: report.audit, error: { kind: report.reason, message: text } };
      return { isError: true, content: [{ type: 'text', text }], structuredContent };
    }
  }
}

/**
 * What registers invoke_agent on each server the SDK builds for the connection (a 2026-07-28 probe's,
 * then a 2025-era one's): one run service for the session, so capacity is counted once.
 */
export function invokeAgentRegistrar(session: InvokeAgentSession): (server: McpServer) => void {
  const service = createRunService(session);
  return (server) => registerInvokeAgentTool(server, session, service);
}

/** Registers invoke_agent: its arguments read here, the run by the run service, its report as the tool result. */
export function registerInvokeAgentTool(server: McpServer, session: InvokeAgentSession, service: RunService = createRunService(session)): void {
  server.registerTool(
    'invoke_agent',
    {
      title: 'Invoke a registered agent (governed text response)',
      description:
        'Sends the registered conversational definition named by `agent` (an agents/*.symbi or *.dsl filename stem) and your prompt to the configured model provider and returns one text answer. ' +
        'The answer is released only after the project Cedar policy permits its exact text and the signed audit journal is durable; structuredContent carries the same answer as `response`, or the failure as `error` {kind, message}, beside agent_id and the audit reference (run_id, journal path, public key). ' +
        'No tools, commands or delegated work are executed. system_prompt is extra caller input sent as a user message; it cannot replace the definition. ' +
        `prompt is limited to ${sizeWords(PROMPT_MAX_BYTES)} and system_prompt to ${sizeWords(SYSTEM_PROMPT_MAX_BYTES)} of UTF-8.`,
      inputSchema: invokeArguments.inputSchema,
      outputSchema: invokeAgentOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    guarded(
      TOOL,
      async (raw: unknown, ctx: ServerContext) => {
        // The SDK aborts this signal when the client cancels the request, and also when the
        // transport closes (v2): either way the run is cancelled and still ends its journal.
        const { signal, _meta: meta } = ctx.mcpReq;
        const progressToken = meta?.progressToken;
        const report = await service.invoke(invokeArguments.read(raw), {
          signal,
          ...(meta !== undefined ? { meta } : {}),
          ...(progressToken !== undefined
            ? { progress: (notice) => ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...notice } }) }
            : {}),
        });
        return toolResult(report);
      },
      (err) => session.log.error(`invoke_agent: internal error: ${(err as Error)?.message ?? String(err)}`, { event: 'tool.internal_error' }),
    ),
  );
}

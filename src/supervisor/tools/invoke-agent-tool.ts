import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { RUN_PHASES, type InvokeOutcome } from '../../shared/run-messages.js';
import { preflightInvocation, type PreflightInputs } from '../invoke-preflight.js';
import type { RunOwnerTable } from '../run-owners.js';

export interface RunLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface InvokeAgentSession extends PreflightInputs {
  owners: RunOwnerTable;
  /** The generated AGENTS.md section, already cut to its limit, if the project has one. */
  guidance?: string | undefined;
  log: RunLog;
}

const inputShape = {
  agent: z.string({ error: 'agent must be a string: the filename stem of an agents/*.symbi or *.dsl file' }),
  prompt: z.string({ error: 'prompt must be a string of at most 64 KiB' }),
  system_prompt: z.string({ error: 'system_prompt, when given, must be a string of at most 64 KiB' }).optional(),
};

const outputShape = {
  agent_id: z.string().describe('The principal UUID the response was produced under'),
  audit: z
    .object({
      run_id: z.string(),
      path: z.string().describe('Absolute path of the signed journal of this run'),
      public_key: z.string().describe('Hex Ed25519 public key that verifies the journal'),
    })
    .describe('Reference to the signed journal of this invocation'),
};

function failure(message: string, agentId?: string, outcome?: InvokeOutcome) {
  const result: { isError: true; content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown> } = {
    isError: true,
    content: [{ type: 'text', text: `invoke_agent refused: ${message}` }],
  };
  if (outcome !== undefined && !outcome.ok && outcome.audit !== undefined && agentId !== undefined) {
    result.content = [{ type: 'text', text: `invoke_agent failed: ${message} (audit: run ${outcome.audit.run_id}, journal ${outcome.audit.path})` }];
    result.structuredContent = { agent_id: agentId, audit: outcome.audit };
  }
  return result;
}

export function registerInvokeAgentTool(server: McpServer, session: InvokeAgentSession): void {
  server.registerTool(
    'invoke_agent',
    {
      title: 'Invoke a registered agent (governed text response)',
      description:
        'Sends the registered conversational definition named by `agent` (an agents/*.symbi or *.dsl filename stem) and your prompt to the configured model provider and returns one text answer. ' +
        'The answer is released only after the project Cedar policy permits its exact text and the signed audit journal is durable; structuredContent carries agent_id and the audit reference (run_id, journal path, public key). ' +
        'No tools, commands or delegated work are executed. system_prompt is extra caller input sent as a user message; it cannot replace the definition. prompt and system_prompt are each limited to 64 KiB.',
      inputSchema: inputShape,
      outputSchema: outputShape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args, extra) => {
      const preflight = preflightInvocation(args, session);
      if (!preflight.ok) {
        session.log.info('invoke_agent refused before inference', { agent: args.agent, reason: preflight.message });
        return failure(preflight.message);
      }
      const { definition } = preflight;
      const runId = randomUUID();
      const progressToken = extra._meta?.progressToken;
      const progressSent: Promise<void>[] = [];
      const startedAt = performance.now();
      session.log.info('run started', { run_id: runId, agent: definition.declaredName, file: definition.file });

      const owner = session.owners.start(
        {
          runId,
          definition,
          prompt: args.prompt,
          ...(args.system_prompt !== undefined ? { systemPrompt: args.system_prompt } : {}),
          ...(session.guidance !== undefined ? { guidance: session.guidance } : {}),
        },
        {
          onProgress: (phase) => {
            if (progressToken === undefined) return;
            // Progress names the phase only; model text never leaves before authorisation.
            progressSent.push(
              extra
                .sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, progress: RUN_PHASES.indexOf(phase) + 1, total: RUN_PHASES.length, message: phase },
                })
                .catch(() => undefined),
            );
          },
        },
      );
      const onAbort = (): void => owner.cancel('the caller cancelled the invocation');
      if (extra.signal.aborted) onAbort();
      else extra.signal.addEventListener('abort', onAbort, { once: true });

      const outcome = await owner.done;
      extra.signal.removeEventListener('abort', onAbort);
      // Every progress notice goes out before the result that ends the request.
      await Promise.all(progressSent);
      const durationMs = Math.round(performance.now() - startedAt);
      const cancelAt = owner.cancelRequestedAt();
      if (cancelAt !== undefined) {
        session.log.info('run cancelled', {
          run_id: runId,
          terminal_durable: outcome.ok || outcome.terminalDurable,
          cancel_to_terminal_ms: Number((performance.now() - cancelAt).toFixed(1)),
        });
      }
      session.log.info('run ended', {
        run_id: runId,
        agent: definition.declaredName,
        outcome: outcome.ok ? 'completed' : outcome.cancelled ? 'cancelled' : 'error',
        duration_ms: durationMs,
      });

      if (outcome.ok) {
        return {
          content: [{ type: 'text' as const, text: outcome.text }],
          structuredContent: { agent_id: definition.principal, audit: outcome.audit },
        };
      }
      if (!outcome.terminalDurable && outcome.audit !== undefined) {
        session.log.warn('run ended without a durable terminal record', { run_id: runId });
      }
      return failure(outcome.message, definition.principal, outcome);
    },
  );
}

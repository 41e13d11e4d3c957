import type { RunDefinition } from '../worker-protocol.js';

// Journal events of a text-response run that both rooms write: the worker for
// every run it starts, and a run's owner for a run cancelled before its worker
// started it. One definition keeps the two byte-for-byte alike.

export const RUN_SURFACE = 'mcp-server';
export const RUN_MODE = 'text_response';

/** The Started event of a run of `definition`, as both rooms write it. */
export function startedEvent(definition: RunDefinition): Record<string, unknown> {
  return {
    Started: {
      execution_context: {
        agent_definition: {
          name: definition.declaredName,
          file: definition.file,
          source_hash: definition.sourceHash,
          declaration_hash: definition.declarationHash,
          mode: RUN_MODE,
          surface: RUN_SURFACE,
          tools_enabled: false,
        },
      },
    },
  };
}

/**
 * The DirectInferenceFinished event of a provider call that produced no response: our message, and
 * the failure's journal fields (provider-error.ts) when the call failed at the provider.
 */
export function failedFinishEvent(callId: string, message: string, error?: Record<string, unknown>): Record<string, unknown> {
  return {
    DirectInferenceFinished: {
      call_id: callId,
      reason: { Error: { message } },
      response_hash: null,
      response_bytes: 0,
      finish_reason: null,
      usage: null,
      ...(error !== undefined ? { error } : {}),
    },
  };
}

import type { RunDefinition } from './run-messages.js';

// Journal events of a text-response run that both rooms write: the worker for
// every run it starts, and a run's owner for a run cancelled before its worker
// started it. One definition keeps the two byte-for-byte alike.

export const RUN_SURFACE = 'mcp-server';
export const RUN_MODE = 'text_response';

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

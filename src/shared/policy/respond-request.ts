// The respond request as Cedar sees it, checked field by field first: only the fields the
// schema names are passed on (nothing extra can ride along), the fixed fields must hold
// their fixed values, and every string must be well-formed Unicode (the wasm boundary
// cannot carry a lone surrogate).
import { sha256Hex } from '../canonical-json.js';
import type { EntityJson } from './cedar-engine.js';
import { isCanonicalUuid } from '../text/uuid.js';

export interface RespondAgentContext {
  name: string;
  file: string;
  source_hash: string;
  declaration_hash: string;
  capabilities: string[];
}

export interface RespondResponseContext {
  content: string;
  sha256: string;
  bytes: number;
  /** The provider-neutral finish reason (finish-reasons.ts); only "complete" reaches Cedar today. */
  finish_reason: string;
  /** The provider's own value ("stop", "end_turn", ...), or "" when it gave none. */
  provider_finish_reason: string;
}

export interface RespondRequest {
  principal: string; // UUID
  agentName: string;
  capabilities: string[];
  context: {
    surface: 'mcp-server';
    mode: 'text_response';
    tools_enabled: false;
    run_id: string;
    agent: RespondAgentContext;
    response: RespondResponseContext;
  };
}

/** The request before inference: everything but the response. */
export type RespondRequestWithoutResponse = Omit<RespondRequest, 'context'> & {
  context: Omit<RespondRequest['context'], 'response'>;
};

/** The fields of a registered definition that the respond request names. */
export interface RespondAgent {
  principal: string;
  declaredName: string;
  file: string;
  sourceHash: string;
  declarationHash: string;
  capabilities: string[];
}

/** The respond request before inference for this agent and run: the one place its context is built. */
export function respondRequestWithoutResponse(agent: RespondAgent, runId: string): RespondRequestWithoutResponse {
  return {
    principal: agent.principal,
    agentName: agent.declaredName,
    capabilities: agent.capabilities,
    context: {
      surface: 'mcp-server',
      mode: 'text_response',
      tools_enabled: false,
      run_id: runId,
      agent: {
        name: agent.declaredName,
        file: agent.file,
        source_hash: agent.sourceHash,
        declaration_hash: agent.declarationHash,
        capabilities: agent.capabilities,
      },
    },
  };
}

/** The response part of the context: the exact text with its hash and size, and the finish reasons. */
export function respondResponseContext(content: string, finishReason: string, providerFinishReason: string | null): RespondResponseContext {
  return {
    content,
    sha256: sha256Hex(content),
    bytes: Buffer.byteLength(content, 'utf8'),
    finish_reason: finishReason,
    provider_finish_reason: providerFinishReason ?? '',
  };
}

/** The respond request on the exact response, for the decision after inference. */
export function respondRequestFor(agent: RespondAgent, runId: string, response: RespondResponseContext): RespondRequest {
  const before = respondRequestWithoutResponse(agent, runId);
  return { ...before, context: { ...before.context, response } };
}

export class InvalidRespondRequest extends Error {}

const PRINCIPAL_TYPE = 'Agent';
export const ACTION_UID = { type: 'Action', id: 'respond' } as const;
export const RESOURCE_UID = { type: 'Resource', id: 'default' } as const;

export interface CedarRequestParts {
  principal: { type: string; id: string };
  entities: EntityJson[];
  /** Context without `response`; the caller adds the exact or the unknown response. */
  baseContext: Record<string, string | boolean | Record<string, string | string[]>>;
}

/** Checks everything but the response and returns the Cedar principal, entities and context. */
export function cedarRequestParts(request: RespondRequestWithoutResponse): CedarRequestParts {
  if (typeof request !== 'object' || request === null) fail('the request must be an object');
  const principal = text(request.principal, 'principal');
  if (!isCanonicalUuid(principal)) fail('principal must be a lowercase UUID');
  const agentName = text(request.agentName, 'agentName');
  const capabilities = texts(request.capabilities, 'capabilities');
  const context = request.context;
  if (typeof context !== 'object' || context === null) fail('context must be an object');
  if (context.surface !== 'mcp-server') fail('context.surface must be "mcp-server"');
  if (context.mode !== 'text_response') fail('context.mode must be "text_response"');
  if (context.tools_enabled !== false) fail('context.tools_enabled must be false: this route runs no tools');
  const agent = context.agent;
  if (typeof agent !== 'object' || agent === null) fail('context.agent must be an object');
  return {
    principal: { type: PRINCIPAL_TYPE, id: principal },
    entities: [{ uid: { type: PRINCIPAL_TYPE, id: principal }, attrs: { name: agentName, capabilities }, parents: [] }],
    baseContext: {
      surface: context.surface,
      mode: context.mode,
      tools_enabled: false,
      run_id: text(context.run_id, 'context.run_id'),
      agent: {
        name: text(agent.name, 'context.agent.name'),
        file: text(agent.file, 'context.agent.file'),
        source_hash: text(agent.source_hash, 'context.agent.source_hash'),
        declaration_hash: text(agent.declaration_hash, 'context.agent.declaration_hash'),
        capabilities: texts(agent.capabilities, 'context.agent.capabilities'),
      },
    },
  };
}

/** Checks the prepared response and returns exactly the schema's fields. */
export function cedarResponse(response: RespondResponseContext): Record<string, string | number> {
  if (typeof response !== 'object' || response === null) fail('context.response must be an object');
  const bytes = response.bytes;
  if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0) fail('context.response.bytes must be a non-negative integer');
  return {
    content: text(response.content, 'context.response.content'),
    sha256: text(response.sha256, 'context.response.sha256'),
    bytes,
    finish_reason: text(response.finish_reason, 'context.response.finish_reason'),
    provider_finish_reason: text(response.provider_finish_reason, 'context.response.provider_finish_reason'),
  };
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string') fail(`${field} must be a string`);
  // Strings cross into the Cedar wasm module as UTF-8, which a lone surrogate has no encoding in:
  // it would be replaced silently or abort the call.
  if (!value.isWellFormed()) fail(`${field} is not well-formed Unicode (it holds a lone surrogate)`);
  return value;
}

function texts(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) fail(`${field} must be an array of strings`);
  return value.map((item, index) => text(item, `${field}[${index}]`));
}

function fail(message: string): never {
  throw new InvalidRespondRequest(message);
}

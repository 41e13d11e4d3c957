import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { escapeToOneLine } from '../../shared/one-line-text.js';

// Tool arguments are checked inside the handlers rather than by the SDK's
// zod validation: the SDK reports zod failures as multi-line text, and every
// bad argument here must get one line saying what was wrong and what is
// allowed. The schemas below therefore accept anything at run time while
// still advertising the precise JSON Schema (types, required, no extras).

export class ToolArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolArgumentError';
  }
}

export interface AdvertisedField {
  type: 'string' | 'object' | 'number' | 'boolean';
  description: string;
  maxLength?: number;
}

/** A permissive zod object that advertises `fields` as the tool's input schema. */
export function advertisedInputSchema(fields: Record<string, AdvertisedField>, required: readonly string[], extra: Record<string, unknown> = {}) {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, field] of Object.entries(fields)) shape[name] = z.unknown().optional().meta({ ...field });
  return z.looseObject(shape).meta({ required: [...required], additionalProperties: false, ...extra });
}

export function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: escapeToOneLine(message) }] };
}

export function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

export function quoteForMessage(value: string, max = 80): string {
  const cut = Array.from(value);
  const shown = cut.length > max ? `${cut.slice(0, max).join('')}...` : value;
  return JSON.stringify(shown);
}

/** Normalises the raw arguments object and refuses names the tool does not take. */
export function argumentObject(tool: string, raw: unknown, allowed: readonly string[]): Record<string, unknown> {
  // Absent arguments are an empty object; null is refused like any other non-object.
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ToolArgumentError(`${tool}: arguments must be an object, got ${describeType(raw)}`);
  const args = raw as Record<string, unknown>;
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key)) {
      const takes = allowed.length === 0 ? 'takes no arguments' : `takes only ${allowed.map((a) => `"${a}"`).join(', ')}`;
      throw new ToolArgumentError(`${tool}: unknown argument ${quoteForMessage(key, 40)}; ${tool} ${takes}`);
    }
  }
  return args;
}

export function requiredString(tool: string, args: Record<string, unknown>, name: string, allowed: string): string {
  const value = args[name];
  if (value === undefined) throw new ToolArgumentError(`${tool}: missing required argument "${name}"; expected ${allowed}`);
  if (typeof value !== 'string') throw new ToolArgumentError(`${tool}: argument "${name}" must be a string, got ${describeType(value)}; expected ${allowed}`);
  return value;
}

/** Runs a handler and turns argument errors (and anything unexpected) into one-line tool errors. */
export function guarded<A extends unknown[]>(
  tool: string,
  handler: (...args: A) => CallToolResult | Promise<CallToolResult>,
  onUnexpected: (err: unknown) => void,
): (...args: A) => Promise<CallToolResult> {
  return async (...args: A) => {
    try {
      return await handler(...args);
    } catch (err) {
      if (err instanceof ToolArgumentError) return toolError(err.message);
      onUnexpected(err);
      return toolError(`${tool}: internal error while handling the request; see the server's standard error`);
    }
  };
}

import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { KiB } from '../../shared/limits.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { isRecord } from '../../shared/json-value.js';

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
  for (const [name, field] of Object.entries(fields))
    shape[name] = z
      .unknown()
      .optional()
      .meta({ ...field });
  return z.looseObject(shape).meta({ required: [...required], additionalProperties: false, ...extra });
}

/** One string argument of a tool: the advertised schema and the handler's checks both come from it. */
export interface StringArgument {
  description: string;
  required: boolean;
  /** What the caller may give, said in every refusal of this argument. */
  allowed: string;
  /** Bounds in UTF-8 bytes, checked before the tool does anything else. */
  minBytes?: number;
  maxBytes?: number;
}

type ReadArguments<F extends Record<string, StringArgument>> = { [K in keyof F]: F[K] extends { required: true } ? string : string | undefined };

/** "64 KiB" for a whole number of KiB, else the bytes. */
export function sizeWords(bytes: number): string {
  return bytes % KiB === 0 ? `${bytes / KiB} KiB` : `${bytes} bytes`;
}

/**
 * Declares a tool's string arguments once: `inputSchema` advertises them (types, required, sizes in
 * the descriptions) and `read` checks a call's arguments against the same declaration, throwing a
 * one-line ToolArgumentError that says what was wrong and what is allowed.
 */
export function declareStringArguments<F extends Record<string, StringArgument>>(tool: string, fields: F) {
  const names = Object.keys(fields);
  const advertised: Record<string, AdvertisedField> = {};
  for (const [name, field] of Object.entries(fields)) {
    const size = field.maxBytes === undefined ? '' : ` (UTF-8, at most ${sizeWords(field.maxBytes)})`;
    advertised[name] = { type: 'string', description: `${field.description}${size}` };
  }
  const inputSchema = advertisedInputSchema(
    advertised,
    names.filter((name) => fields[name]!.required),
  );
  const read = (raw: unknown): ReadArguments<F> => {
    const args = argumentObject(tool, raw, names);
    const values: Record<string, string | undefined> = {};
    for (const [name, field] of Object.entries(fields)) {
      if (!field.required && args[name] === undefined) continue;
      const value = requiredString(tool, args, name, field.allowed);
      const bytes = Buffer.byteLength(value, 'utf8');
      if (field.minBytes !== undefined && bytes < field.minBytes) {
        throw new ToolArgumentError(`${tool}: "${name}" must be ${field.minBytes} to ${field.maxBytes ?? 'any number of'} bytes; expected ${field.allowed}`);
      }
      if (field.maxBytes !== undefined && bytes > field.maxBytes) {
        throw new ToolArgumentError(
          field.minBytes !== undefined
            ? `${tool}: "${name}" must be ${field.minBytes} to ${field.maxBytes} bytes; expected ${field.allowed}`
            : `${tool}: ${name} is ${bytes} bytes; the limit is ${field.maxBytes} bytes (${sizeWords(field.maxBytes)})`,
        );
      }
      values[name] = value;
    }
    return values as ReadArguments<F>;
  };
  return { inputSchema, read };
}

/** A tool result that is an error: one line, control characters escaped. */
export function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: escapeToOneLine(message) }] };
}

/** A tool result carrying `value` as pretty JSON text and as structuredContent. */
export function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/** "null", "an array" or "a <typeof>": a value's JSON type for a refusal, never the value. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** A caller's string quoted for a message, cut at `max` characters, escaped as escapeToOneLine does. */
export function quoteForMessage(value: string, max = 80): string {
  // Array.from splits by code point; a long string is first cut to what can matter.
  const cut = Array.from(value.slice(0, max * 2));
  const shown = cut.length > max || value.length > max * 2 ? `${cut.slice(0, max).join('')}...` : value;
  // JSON.stringify escapes C0 controls and quotes; escapeToOneLine also C1 and bidirectional controls.
  return escapeToOneLine(JSON.stringify(shown));
}

/** Normalizes the raw arguments object and refuses names the tool does not take. */
export function argumentObject(tool: string, raw: unknown, allowed: readonly string[]): Record<string, unknown> {
  // Absent arguments are an empty object; null is refused like any other non-object.
  if (raw === undefined) return {};
  if (!isRecord(raw)) throw new ToolArgumentError(`${tool}: arguments must be an object, got ${describeType(raw)}`);
  const args = raw;
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key)) {
      const takes = allowed.length === 0 ? 'takes no arguments' : `takes only ${allowed.map((a) => `"${a}"`).join(', ')}`;
      throw new ToolArgumentError(`${tool}: unknown argument ${quoteForMessage(key, 40)}; ${tool} ${takes}`);
    }
  }
  return args;
}

/** The argument `name` as a string, or a one-line ToolArgumentError naming what is allowed. */
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

import { jsonPathText } from '../text/strict-json.js';
import { isRecord } from '../json-value.js';
import { isCanonicalUuid } from '../text/uuid.js';

// The rules a journal record is held to, field by field, as one small declaration language: a
// format's records are declared once with it (journal-records.ts for Symbiont's, below for this
// server's earlier 0.1 format), the writers' TypeScript types are inferred from the same
// declaration (Infer), and the verifier checks every record against it. A record with an event or
// a field the format names nowhere, or a value of another type, is refused as malformed, so that
// every reader finds one meaning in it. Numbers are judged earlier, as they are read
// (journalNumberProblem).

/** `uint`: a `u64` or `usize` (held to 2^53-1, as every integer here); `u32`: a Rust `u32`, at most 2^32-1. */
export type Scalar = 'string' | 'uint' | 'u32' | 'float' | 'bool' | 'hex64' | 'sha256' | 'uuid' | 'terminal_reason' | 'json';
export type Fields = { readonly [key: string]: Rule };
export type Rule =
  | Scalar
  | { readonly nullable: Rule }
  | { readonly array: Rule }
  | { readonly literal: readonly string[] }
  | { readonly object: Fields; readonly optional?: Fields }
  /** A Rust enum in serde's external tagging: a unit variant is its name, any other `{"Name": {fields}}`. */
  | { readonly variants: { readonly [name: string]: Fields | null } };

/** The TypeScript type of the values a rule accepts, so a record's writers and its rule are one declaration. */
interface ScalarTypes {
  string: string;
  hex64: string;
  sha256: string;
  uuid: string;
  uint: number;
  u32: number;
  float: number;
  bool: boolean;
  json: unknown;
  terminal_reason: LegacyTerminalReason;
}
export type Infer<R> = R extends Scalar
  ? ScalarTypes[R]
  : R extends { readonly object: infer F; readonly optional: infer O }
    ? InferFields<F> & { -readonly [K in keyof O]?: Infer<O[K]> }
    : R extends { readonly array: infer I }
      ? Infer<I>[]
      : R extends { readonly nullable: infer I }
        ? Infer<I> | null
        : R extends { readonly literal: readonly (infer L)[] }
          ? L
          : R extends { readonly variants: infer V }
            ? VariantOf<V>
            : R extends { readonly object: infer F }
              ? InferFields<F>
              : never;
export type InferFields<F> = { -readonly [K in keyof F]: Infer<F[K]> };
type VariantOf<V> = { [K in keyof V]: V[K] extends null ? K : { [P in K]: InferFields<V[K]> } }[keyof V];

type LegacyTerminalReason = 'Completed' | { Error: { message: string } };

/** An object whose `fields` are required and whose `optional` fields may be absent (serde's Option or default). */
export function obj<const F extends Fields>(fields: F): { object: F };
export function obj<const F extends Fields, const O extends Fields>(fields: F, optional: O): { object: F; optional: O };
export function obj(fields: Fields, optional?: Fields): { object: Fields; optional?: Fields } {
  return optional === undefined ? { object: fields } : { object: fields, optional };
}
export function variants<const V extends { readonly [name: string]: Fields | null }>(v: V): { variants: V } {
  return { variants: v };
}
export function literal<const L extends readonly string[]>(...values: L): { literal: L } {
  return { literal: values };
}
export function arrayOf<const R extends Rule>(rule: R): { array: R } {
  return { array: rule };
}
export function nullable<const R extends Rule>(rule: R): { nullable: R } {
  return { nullable: rule };
}

/** The top of a payload: Symbiont's `Payload` (deny_unknown_fields) and `JournalEntry`. */
export const PAYLOAD_FIELDS: readonly string[] = ['version', 'run_id', 'previous_hash', 'entry'];
export const ENTRY_FIELDS: readonly string[] = ['sequence', 'timestamp', 'agent_id', 'iteration', 'event'];

const USAGE: Rule = nullable({ object: { input_tokens: nullable('uint'), output_tokens: nullable('uint') } });

/** What this server keeps about a failed provider call (ProviderError.journalFields()), in both formats. */
export const PROVIDER_ERROR = obj({
  kind: 'string',
  status: nullable('uint'),
  error_type: nullable('string'),
  error_param: nullable('string'),
  request_id: nullable('string'),
  retry_after_ms: nullable('uint'),
  body_sha256: nullable('hex64'),
  body_bytes: nullable('uint'),
});

/** Every event this server wrote before it wrote Symbiont's records (journal format `symbi-mcp-0.1`), and the fields of each. */
const LEGACY_EVENT_FIELDS: Readonly<Record<string, Fields>> = {
  Started: {
    execution_context: {
      object: {
        agent_definition: {
          object: {
            name: 'string',
            file: 'string',
            source_hash: 'hex64',
            declaration_hash: 'hex64',
            mode: 'string',
            surface: 'string',
            tools_enabled: 'bool',
          },
        },
      },
    },
  },
  DirectInferenceRequested: {
    call_id: 'string',
    operation: 'string',
    provider: 'string',
    model: 'string',
    request_hash: 'hex64',
    request_bytes: 'uint',
    recipient: nullable('uuid'),
    recipient_definition_hash: nullable('hex64'),
  },
  DirectInferenceResponseReceived: { call_id: 'string', response_hash: 'hex64', response_bytes: 'uint' },
  DirectInferenceFinished: {
    call_id: 'string',
    reason: 'terminal_reason',
    response_hash: nullable('hex64'),
    response_bytes: 'uint',
    finish_reason: nullable('string'),
    provider_finish_reason: nullable('string'),
    usage: USAGE,
    error: PROVIDER_ERROR,
  },
  PolicyEvaluated: {
    action: 'string',
    decision: 'string',
    determining_policies: { array: 'string' },
    errors: { array: 'string' },
    denied_count: 'uint',
    response_hash: 'hex64',
    response_bytes: 'uint',
  },
  Terminated: { reason: 'terminal_reason' },
};

const SHA256 = /^sha256:[0-9a-f]{64}$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** 64 lowercase hexadecimal characters: a SHA-256 digest or an Ed25519 key as the journal writes them. */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

/** The largest Rust `u32`, the type of Symbiont's token counts (inference.rs `Usage`) and budget fields. */
export const U32_MAX = 0xffff_ffff;

const PLAIN_INTEGER = /^(?:0|[1-9][0-9]*)$/;
// A fraction as serde_json writes an f32 widened to f64 (LoopConfig.temperature: 0.30000001192092896).
const PLAIN_FRACTION = /^(?:0|[1-9][0-9]{0,5})\.[0-9]{0,16}[1-9]$/;

/**
 * How the writers write every number: a non-negative integer in plain decimal digits (no sign,
 * exponent or leading zero, at most 2^53-1), or a short fraction that no reader takes for an
 * integer. Anything else (0e0, 1.0, -0, 2.0000000000000000001) is a second spelling of a number, or
 * one another reader may round differently. Integer fields refuse fractions (ruleProblem).
 */
export function journalNumberProblem(lexeme: string): string | undefined {
  if (PLAIN_FRACTION.test(lexeme)) {
    return Number.isInteger(Number(lexeme)) ? 'is a fraction that a double reads as an integer' : undefined;
  }
  if (!PLAIN_INTEGER.test(lexeme)) return 'is not written as the journal writer writes numbers (a non-negative integer in plain decimal digits)';
  if (Number(lexeme) > Number.MAX_SAFE_INTEGER) return `is above ${Number.MAX_SAFE_INTEGER}, the largest integer every reader holds exactly`;
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function shownKey(key: string): string {
  return JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}...` : key);
}

/** The first key of `value` not in `allowed`, as a refusal naming it. */
export function unknownKeyProblem(value: Record<string, unknown>, allowed: readonly string[], where: string): string | undefined {
  const extra = Object.keys(value).find((key) => !allowed.includes(key));
  return extra === undefined ? undefined : `${where} has a field ${shownKey(extra)} that this journal format does not define`;
}

/**
 * How strictly fields are judged: the 0.1 format lets any field be absent (its verifier needed only
 * call_id and reason); Symbiont's records need every field serde requires.
 */
interface Strictness {
  requireFields: boolean;
}

function fieldsProblem(value: Record<string, unknown>, required: Fields, optional: Fields, path: (string | number)[], how: Strictness): string | undefined {
  const at = jsonPathText(path);
  const extra = unknownKeyProblem(value, [...Object.keys(required), ...Object.keys(optional)], at);
  if (extra !== undefined) return extra;
  for (const [key, inner] of Object.entries(required)) {
    if (!Object.hasOwn(value, key)) {
      if (how.requireFields) return `${at} has no field ${shownKey(key)}, which the record needs`;
      continue;
    }
    const problem = ruleProblem(value[key], inner, [...path, key], how);
    if (problem !== undefined) return problem;
  }
  for (const [key, inner] of Object.entries(optional)) {
    if (!Object.hasOwn(value, key)) continue;
    const problem = ruleProblem(value[key], inner, [...path, key], how);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function ruleProblem(value: unknown, rule: Rule, path: (string | number)[], how: Strictness): string | undefined {
  const at = jsonPathText(path);
  if (typeof rule === 'object') {
    if ('nullable' in rule) return value === null ? undefined : ruleProblem(value, rule.nullable, path, how);
    if ('array' in rule) {
      if (!Array.isArray(value)) return `${at} is ${describe(value)}, not an array`;
      for (let i = 0; i < value.length; i += 1) {
        const problem = ruleProblem(value[i], rule.array, [...path, i], how);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    if ('literal' in rule) {
      return typeof value === 'string' && rule.literal.includes(value)
        ? undefined
        : `${at} is not one of ${rule.literal.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    if ('variants' in rule) {
      const names = Object.keys(rule.variants);
      if (typeof value === 'string') {
        return Object.hasOwn(rule.variants, value) && rule.variants[value] === null ? undefined : `${at} is not one of the variants ${names.join(', ')}`;
      }
      if (!isRecord(value) || Object.keys(value).length !== 1) return `${at} is not one of the variants ${names.join(', ')}`;
      const name = Object.keys(value)[0]!;
      const fields = Object.hasOwn(rule.variants, name) ? rule.variants[name] : undefined;
      if (fields === undefined || fields === null) return `${at} is not one of the variants ${names.join(', ')}`;
      const inner = value[name];
      if (!isRecord(inner)) return `${jsonPathText([...path, name])} is ${describe(inner)}, not an object`;
      return fieldsProblem(inner, fields, {}, [...path, name], { requireFields: true });
    }
    if (!isRecord(value)) return `${at} is ${describe(value)}, not an object`;
    return fieldsProblem(value, rule.object, rule.optional ?? {}, path, how);
  }
  switch (rule) {
    case 'json':
      return undefined;
    case 'string':
      return typeof value === 'string' ? undefined : `${at} is ${describe(value)}, not a string`;
    case 'uint':
      return typeof value === 'number' && Number.isInteger(value) ? undefined : `${at} is ${describe(value)}, not an integer`;
    case 'u32':
      if (typeof value !== 'number' || !Number.isInteger(value)) return `${at} is ${describe(value)}, not an integer`;
      return value <= U32_MAX ? undefined : `${at} is above ${U32_MAX}, the largest value of Symbiont's u32 field`;
    case 'float':
      return typeof value === 'number' ? undefined : `${at} is ${describe(value)}, not a number`;
    case 'bool':
      return typeof value === 'boolean' ? undefined : `${at} is ${describe(value)}, not true or false`;
    case 'hex64':
      return isHex64(value) ? undefined : `${at} is not 64 lowercase hexadecimal characters`;
    case 'sha256':
      return typeof value === 'string' && SHA256.test(value) ? undefined : `${at} is not "sha256:" and 64 lowercase hexadecimal characters`;
    case 'uuid':
      return isCanonicalUuid(value) ? undefined : `${at} is not a lowercase UUID`;
    case 'terminal_reason':
      if (value === 'Completed') return undefined;
      if (isRecord(value) && Object.keys(value).length === 1 && isRecord(value.Error)) {
        const error = value.Error;
        if (Object.keys(error).length === 1 && typeof error.message === 'string') return undefined;
      }
      return `${at} is neither "Completed" nor {"Error":{"message":...}}`;
  }
}

/** One journal record format: its events and their fields, and whether serde's required fields are required. */
export interface RecordFormat {
  name: 'symbiont-response-route' | 'symbi-mcp-0.1';
  /** Each event's fields: those a record must have (when `requireFields`), and those it may have. */
  events: Readonly<Record<string, { required: Fields; optional: Fields }>>;
  requireFields: boolean;
}

export const LEGACY_FORMAT: RecordFormat = {
  name: 'symbi-mcp-0.1',
  events: Object.fromEntries(Object.entries(LEGACY_EVENT_FIELDS).map(([name, fields]) => [name, { required: fields, optional: {} }])),
  requireFields: false,
};

/** Why the fields of event `name` are not what `format` defines, or undefined when they are. */
export function eventProblem(format: RecordFormat, name: string, fields: unknown): string | undefined {
  const rules = Object.hasOwn(format.events, name) ? format.events[name] : undefined;
  if (rules === undefined) return `the event ${shownKey(name)} is not one this journal format defines (${Object.keys(format.events).join(', ')})`;
  return ruleProblem(fields, { object: rules.required, optional: rules.optional }, ['entry', 'event', name], { requireFields: format.requireFields });
}

import { jsonPathText } from '../text/strict-json.js';

// What a journal payload may hold, field by field: the records this server's
// writer produces (src/worker/invocation.ts, run-events.ts), each checked
// against Symbiont's own types (docs/audit.md cites them). A record with an
// event or a field named here nowhere, or a value of another type, is refused
// as malformed, so that every reader finds one meaning in it. A field may be
// absent (the verifier needs only call_id and reason); when present it must
// have its type. Numbers are judged earlier, as they are read (journalNumberProblem).

type Rule =
  | 'string'
  | 'uint'
  | 'bool'
  | 'hex64'
  | 'uuid'
  | 'terminal_reason'
  | { nullable: Rule }
  | { array: Rule }
  | { object: Record<string, Rule> };

const nullable = (rule: Rule): Rule => ({ nullable: rule });

/** The top of a payload: Symbiont's `Payload` (deny_unknown_fields) and `JournalEntry`. */
export const PAYLOAD_FIELDS: readonly string[] = ['version', 'run_id', 'previous_hash', 'entry'];
export const ENTRY_FIELDS: readonly string[] = ['sequence', 'timestamp', 'agent_id', 'iteration', 'event'];

const USAGE: Rule = nullable({ object: { input_tokens: nullable('uint'), output_tokens: nullable('uint') } });

// The fields ProviderError.journalFields() keeps about a failed provider call.
const PROVIDER_ERROR: Rule = {
  object: {
    kind: 'string',
    status: nullable('uint'),
    error_type: nullable('string'),
    error_param: nullable('string'),
    request_id: nullable('string'),
    retry_after_ms: nullable('uint'),
    body_sha256: nullable('hex64'),
    body_bytes: nullable('uint'),
  },
};

/** Every event this server writes, and the fields of each. */
export const EVENT_FIELDS: Readonly<Record<string, Record<string, Rule>>> = {
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

const HEX64 = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PLAIN_INTEGER = /^(?:0|[1-9][0-9]*)$/;

/**
 * How the writer writes every number (canonical JSON of non-negative integers): plain decimal
 * digits, no sign, fraction, exponent or leading zero, at most 2^53-1. Anything else (0e0, 1.0, -0)
 * is a second spelling of a number, or one another reader may round differently.
 */
export function journalNumberProblem(lexeme: string): string | undefined {
  if (!PLAIN_INTEGER.test(lexeme)) return 'is not written as the journal writer writes numbers (a non-negative integer in plain decimal digits)';
  if (Number(lexeme) > Number.MAX_SAFE_INTEGER) return `is above ${Number.MAX_SAFE_INTEGER}, the largest integer every reader holds exactly`;
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
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

function ruleProblem(value: unknown, rule: Rule, path: (string | number)[]): string | undefined {
  const at = jsonPathText(path);
  if (typeof rule === 'object') {
    if ('nullable' in rule) return value === null ? undefined : ruleProblem(value, rule.nullable, path);
    if ('array' in rule) {
      if (!Array.isArray(value)) return `${at} is ${describe(value)}, not an array`;
      for (let i = 0; i < value.length; i += 1) {
        const problem = ruleProblem(value[i], rule.array, [...path, i]);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    if (!isObject(value)) return `${at} is ${describe(value)}, not an object`;
    const extra = unknownKeyProblem(value, Object.keys(rule.object), at);
    if (extra !== undefined) return extra;
    for (const [key, inner] of Object.entries(rule.object)) {
      if (!Object.hasOwn(value, key)) continue;
      const problem = ruleProblem(value[key], inner, [...path, key]);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  switch (rule) {
    case 'string':
      return typeof value === 'string' ? undefined : `${at} is ${describe(value)}, not a string`;
    case 'uint':
      return typeof value === 'number' ? undefined : `${at} is ${describe(value)}, not an integer`;
    case 'bool':
      return typeof value === 'boolean' ? undefined : `${at} is ${describe(value)}, not true or false`;
    case 'hex64':
      return typeof value === 'string' && HEX64.test(value) ? undefined : `${at} is not 64 lowercase hexadecimal characters`;
    case 'uuid':
      return typeof value === 'string' && UUID.test(value) ? undefined : `${at} is not a lowercase UUID`;
    case 'terminal_reason':
      if (value === 'Completed') return undefined;
      if (isObject(value) && Object.keys(value).length === 1 && isObject(value.Error)) {
        const error = value.Error;
        if (Object.keys(error).length === 1 && typeof error.message === 'string') return undefined;
      }
      return `${at} is neither "Completed" nor {"Error":{"message":...}}`;
  }
}

/** Why the fields of event `name` are not what this journal format defines, or undefined when they are. */
export function eventProblem(name: string, fields: unknown): string | undefined {
  const rules = Object.hasOwn(EVENT_FIELDS, name) ? EVENT_FIELDS[name] : undefined;
  if (rules === undefined) return `the event ${shownKey(name)} is not one this journal format defines (${Object.keys(EVENT_FIELDS).join(', ')})`;
  return ruleProblem(fields, { object: rules }, ['entry', 'event', name]);
}

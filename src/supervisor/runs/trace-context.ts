// The W3C trace context a caller may put in a request's `_meta` (`traceparent`, `tracestate`: the keys
// MCP reserves for OpenTelemetry, SEP-414), carried into that run's `run.started` and `run.ended`
// events so an operator can join an IDE agent's trace to a governed run. Only values of the W3C
// grammar pass (https://www.w3.org/TR/trace-context/, sections 3.2 and 3.3): anything else is caller
// text, which never reaches standard error. It never reaches the journal either.

/** The trace context fields of an operator event, each present only when well formed. */
export interface TraceContext {
  traceparent?: string;
  tracestate?: string;
}

// version 00: a 32-hex trace id and a 16-hex parent id, neither all zeros, and 2-hex flags.
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
// list-members: a key (simple or tenant@system) = a value of printable ASCII but `,` and `=`.
const TRACESTATE_MEMBER =
  /^(?:[a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
// At most 32 list-members (W3C), and a cap on the whole so one event line stays short.
const TRACESTATE_MAX_MEMBERS = 32;
const TRACESTATE_MAX_CHARS = 512;

function wellFormedTracestate(value: string): boolean {
  if (value.length > TRACESTATE_MAX_CHARS) return false;
  const members = value
    .split(',')
    .map((member) => member.trim())
    .filter((member) => member !== '');
  return members.length > 0 && members.length <= TRACESTATE_MAX_MEMBERS && members.every((member) => TRACESTATE_MEMBER.test(member));
}

/** The well-formed trace context of a request's `_meta`; a `tracestate` counts only beside a `traceparent`. */
export function traceContextOf(meta: Record<string, unknown> | undefined): TraceContext {
  const parent = meta?.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return {};
  const state = meta?.tracestate;
  return typeof state === 'string' && wellFormedTracestate(state) ? { traceparent: parent, tracestate: state } : { traceparent: parent };
}

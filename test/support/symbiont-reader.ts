import fs from 'node:fs';

// An independent reader of journal records, written from Symbiont's Rust types and not from this
// server's declarations (src/shared/journal/journal-records.ts is not imported): it answers "would
// Symbiont's serde types deserialize this record?" for every journal a test produces. Each rule
// cites the type it transcribes, in jaschadub/Symbiont at 3afac162d7a12eaabc4b6c2a0b7f2b5745b27190,
// crates/runtime/src/reasoning/. Like serde, it ignores unknown fields except in the types that say
// `deny_unknown_fields` (Payload, SignedRecord, InferenceReservation, ScopeIdentity).

type Check = (value: unknown, at: string) => void;

class RecordRefused extends Error {}

const fail = (at: string, why: string): never => {
  throw new RecordRefused(`${at}: ${why}`);
};

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// serde's primitive readers: an unsigned integer refuses a fraction and a negative; a String refuses anything else.
const u64: Check = (v, at) => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(at, 'not an unsigned integer');
};
const u32: Check = (v, at) => {
  u64(v, at);
  if ((v as number) > 0xffff_ffff) fail(at, 'above u32');
};
const f32: Check = (v, at) => {
  if (typeof v !== 'number') fail(at, 'not a number');
};
const string: Check = (v, at) => {
  if (typeof v !== 'string') fail(at, 'not a string');
};
const bool: Check = (v, at) => {
  if (typeof v !== 'boolean') fail(at, 'not a bool');
};
// uuid::Uuid deserializes the hyphenated form (any case); AgentId is a newtype over it (types/mod.rs).
const uuid: Check = (v, at) => {
  if (typeof v !== 'string' || !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(v)) fail(at, 'not a UUID');
};
const any: Check = () => undefined;
// An Option<T> without `default`: serde reads a missing field or null as None.
const option =
  (inner: Check): Check =>
  (v, at) => {
    if (v !== undefined && v !== null) inner(v, at);
  };
const vec =
  (inner: Check): Check =>
  (v, at) => {
    if (!Array.isArray(v)) fail(at, 'not an array');
    (v as unknown[]).forEach((item, i) => inner(item, `${at}[${i}]`));
  };

/** A struct: required fields, `#[serde(default)]` fields (absent allowed), and whether it denies unknown fields. */
function struct(required: Record<string, Check>, defaults: Record<string, Check> = {}, denyUnknown = false): Check {
  return (v, at) => {
    if (!isMap(v)) fail(at, 'not an object');
    const map = v as Record<string, unknown>;
    for (const [key, check] of Object.entries(required)) {
      // Option fields are optional to serde even without `default`.
      if (!(key in map) && !OPTIONS.has(check)) fail(at, `missing field \`${key}\``);
      check(map[key], `${at}.${key}`);
    }
    for (const [key, check] of Object.entries(defaults)) if (key in map) check(map[key], `${at}.${key}`);
    if (denyUnknown) {
      for (const key of Object.keys(map)) if (!(key in required) && !(key in defaults)) fail(at, `unknown field \`${key}\``);
    }
  };
}

const OPTIONS = new WeakSet<Check>();
function opt(inner: Check): Check {
  const check = option(inner);
  OPTIONS.add(check);
  return check;
}

/** An externally tagged enum: unit variants as a string, the others as `{"Variant": {...}}`. */
function externallyTagged(units: string[], variants: Record<string, Check>): Check {
  return (v, at) => {
    if (typeof v === 'string') {
      if (!units.includes(v)) fail(at, `unknown variant \`${v}\``);
      return;
    }
    if (!isMap(v) || Object.keys(v).length !== 1) fail(at, 'not an enum value');
    const [name] = Object.keys(v as object) as [string];
    const check = variants[name];
    if (check === undefined) fail(at, `unknown variant \`${name}\``);
    check!((v as Record<string, unknown>)[name], `${at}.${name}`);
  };
}

// loop_types.rs: Duration is serde's {secs: u64, nanos: u32}.
const duration = struct({ secs: u64, nanos: u32 });
// inference.rs Usage.
const usage = struct({ prompt_tokens: u32, completion_tokens: u32, total_tokens: u32 });
// loop_types.rs TerminationReason.
const terminationReason = externallyTagged(['Completed', 'MaxIterations', 'MaxTokens', 'Timeout', 'UnconfirmedEffects'], {
  PolicyDenial: struct({ reason: string }),
  Error: struct({ message: string }),
});
// inference.rs FinishReason, rename_all = "snake_case".
const finishReason: Check = (v, at) => {
  if (!['stop', 'tool_calls', 'max_tokens', 'content_filter', 'refusal'].includes(v as string)) fail(at, `unknown variant \`${String(v)}\``);
};
// loop_types.rs RecoveryStrategy.
const recovery = externallyTagged(['DeadLetter'], {
  Retry: struct({ max_attempts: u32, base_delay: duration }),
  Fallback: struct({ alternatives: vec(string) }),
  CachedResult: struct({ max_staleness: duration }),
  LlmRecovery: struct({ max_recovery_attempts: u32 }),
  Escalate: struct({ queue: string, context_snapshot: bool }),
});
// loop_types.rs LoopConfig.
const loopConfig = struct(
  {
    max_iterations: u32,
    max_total_tokens: u32,
    timeout: duration,
    default_recovery: recovery,
    tool_timeout: duration,
    max_concurrent_tools: u64,
    context_token_budget: u64,
  },
  {
    temperature: f32,
    max_output_tokens: u32,
    max_delegation_depth: u32,
    delegation_depth: u32,
    delegation_chain: vec(string),
    tool_definitions: vec(any),
    tool_choice: any,
  },
);
// run_audit.rs RunAuditReference.
const runAudit = struct({ run_id: uuid, path: string, public_key: string });
// budget/journal.rs ScopeIdentity and InferenceReservation, both deny_unknown_fields.
const scope = struct({ scope: u64, parent: opt(u64), limit: u32 }, {}, true);
const reservation = struct(
  {
    id: uuid,
    root_id: uuid,
    ancestors: vec(scope),
    input_tokens: u32,
    output_tokens: u32,
    agent_id: uuid,
    audit: opt(runAudit),
    iteration: u32,
    provider: string,
    model: string,
    request_hash: string,
    request_bytes: u64,
  },
  {},
  true,
);
// budget.rs BudgetSnapshot.
const snapshot = struct({ root_id: uuid, scope: u64, limit: u32, usage, reserved_tokens: u32, uncertain_tokens: u32, available_tokens: u32, exceeded: bool });
const outcome: Check = (v, at) => {
  if (!['confirmed', 'unknown', 'exceeded'].includes(v as string)) fail(at, `unknown variant \`${String(v)}\``);
};
// loop_types.rs ProposedAction and Observation.
const proposedAction = externallyTagged([], {
  ToolCall: struct({ call_id: string, name: string, arguments: string }),
  Delegate: struct({ call_id: string, target: string, message: string }),
  Respond: struct({ content: string }),
  Terminate: struct({ reason: string, output: string }),
});
const observation = struct({ source: string, content: string, is_error: bool }, { call_id: string, metadata: any });

/** loop_types.rs LoopEvent: the variants this route writes (any other variant name is refused here). */
export const LOOP_EVENTS: Record<string, Check> = {
  Started: struct({ agent_id: uuid, config: loopConfig }, { execution_context: (v, at) => (isMap(v) ? undefined : fail(at, 'not a map')) }),
  BudgetOpened: struct({ root_id: uuid, limit: u32 }),
  BudgetReservationStarted: struct({ reservation }),
  DirectInferenceRequested: struct({
    call_id: string,
    operation: string,
    provider: string,
    model: string,
    request_hash: string,
    request_bytes: u64,
    recipient: opt(uuid),
    recipient_definition_hash: opt(string),
    communication: opt(any),
  }),
  DirectInferenceResponseReceived: struct({ call_id: string, response_hash: string, response_bytes: u64 }),
  DirectInferenceFinished: struct({
    call_id: string,
    reason: terminationReason,
    response_hash: opt(string),
    response_bytes: u64,
    finish_reason: opt(finishReason),
    usage,
  }),
  BudgetReservationFinished: struct({ root_id: uuid, reservation_id: uuid, usage, outcome }),
  ReasoningComplete: struct({ iteration: u32, actions: vec(proposedAction), usage }),
  PolicyEvaluated: struct({ iteration: u32, action_count: u64, denied_count: u64 }, { approved_calls: vec(any), denied_calls: vec(any) }),
  ToolsDispatched: struct({ iteration: u32, tool_count: u64, duration }),
  ToolBatchCompleted: struct({ iteration: u32, observations: vec(observation), duration }),
  ObservationsCollected: struct({ iteration: u32, observation_count: u64 }),
  BudgetUpdated: struct({ budget: snapshot }),
  Terminated: struct({ reason: terminationReason, iterations: u32, total_usage: usage, duration }),
};

// loop_types.rs JournalEntry (not deny_unknown_fields); chrono reads any RFC 3339 time.
const entry = struct({
  sequence: u64,
  timestamp: (v, at) => {
    if (typeof v !== 'string' || Number.isNaN(Date.parse(v)) || !/^\d{4}-\d{2}-\d{2}T/.test(v)) fail(at, 'not an RFC 3339 time');
  },
  agent_id: uuid,
  iteration: u32,
  event: externallyTagged([], LOOP_EVENTS),
});
// protected_journal.rs Payload, deny_unknown_fields; version 2 carries a run_id.
const payload = struct({ version: u32, run_id: opt(uuid), previous_hash: string, entry }, {}, true);

// protected_journal.rs, ProtectedJournal::append: once a record with an unconfirmed outcome is written
// (has_unconfirmed_outcome), an effect-starting record (starts_effect) is refused: "execution stopped
// after an unconfirmed outcome; reconciliation is required". Only the variants this route writes matter.
const STARTS_EFFECT = new Set(['Started', 'BudgetReservationStarted', 'DirectInferenceRequested']);
function hasUnconfirmedOutcome(name: string, fields: Record<string, unknown>): boolean {
  return (name === 'DirectInferenceFinished' || name === 'Terminated') && fields.reason !== 'Completed';
}

/** Applies Symbiont's writer rule to a journal's events, in order; throws naming the first record its writer would have refused. */
export function checkWriterRule(events: readonly Record<string, Record<string, unknown>>[], where: string): void {
  let unconfirmedAt: number | undefined;
  events.forEach((event, index) => {
    const name = Object.keys(event)[0]!;
    if (unconfirmedAt !== undefined && STARTS_EFFECT.has(name)) {
      fail(
        `${where}:${index + 1}`,
        `${name} after the unconfirmed outcome at line ${unconfirmedAt}: Symbiont's writer refuses it (reconciliation is required)`,
      );
    }
    if (unconfirmedAt === undefined && hasUnconfirmedOutcome(name, event[name]!)) unconfirmedAt = index + 1;
  });
}

/**
 * The event names of a journal's records, after checking each deserializes under Symbiont's types
 * and that Symbiont's writer would have appended it (the rule above); throws naming the line and
 * field otherwise.
 */
export function readAsSymbiont(file: string): string[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  if (lines.at(-1) !== '') throw new RecordRefused(`${file}: the last line has no newline`);
  const events: Record<string, Record<string, unknown>>[] = [];
  const names = lines.slice(0, -1).map((line, index) => {
    const at = `${file}:${index + 1}`;
    const signed = JSON.parse(line) as unknown;
    // protected_journal.rs SignedRecord, deny_unknown_fields.
    struct({ payload: any, signature: string }, {}, true)(signed, at);
    const record = (signed as { payload: { version: number; entry: { event: Record<string, Record<string, unknown>> } } }).payload;
    payload(record, `${at} payload`);
    if (record.version !== 2) fail(at, 'version is not 2');
    events.push(record.entry.event);
    return Object.keys(record.entry.event)[0]!;
  });
  checkWriterRule(events, file);
  return names;
}

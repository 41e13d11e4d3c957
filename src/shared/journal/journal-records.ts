import { arrayOf, type Fields, type InferFields, literal, nullable, obj, PROVIDER_ERROR, type RecordFormat, variants } from './journal-record-rules.js';

// Symbiont's journal records, declared once. Each declaration is the variant of Symbiont's
// `LoopEvent` (or the type inside it) with the fields its serde derive requires, and the optional
// ones (an `Option` or a `#[serde(default)]` field) second. The writers build records through the
// types inferred from these declarations (JournalEvent), so a changed field is a compile error at
// every writer; `audit inspect` checks every record against the same declarations; docs/audit.md
// lists them. Source: jaschadub/Symbiont at 3afac162d7a12eaabc4b6c2a0b7f2b5745b27190,
// crates/runtime/src/reasoning/ (loop_types.rs, inference.rs, budget.rs, budget/journal.rs,
// run_audit.rs). Fields this server adds (marked "ours") sit only where Symbiont's type ignores
// unknown fields (LoopEvent variants and the free-form maps), never in a `deny_unknown_fields` type.

/** `std::time::Duration` as serde writes it. */
const DURATION = obj({ secs: 'uint', nanos: 'u32' });

/** inference.rs `Usage`. */
const USAGE = obj({ prompt_tokens: 'u32', completion_tokens: 'u32', total_tokens: 'u32' });

/** loop_types.rs `TerminationReason`. */
const TERMINATION_REASON = variants({
  Completed: null,
  MaxIterations: null,
  MaxTokens: null,
  Timeout: null,
  UnconfirmedEffects: null,
  PolicyDenial: { reason: 'string' },
  Error: { message: 'string' },
});

/** inference.rs `FinishReason` (`rename_all = "snake_case"`). */
const FINISH_REASON = literal('stop', 'tool_calls', 'max_tokens', 'content_filter', 'refusal');

/** loop_types.rs `RecoveryStrategy`. */
const RECOVERY_STRATEGY = variants({
  Retry: { max_attempts: 'u32', base_delay: DURATION },
  Fallback: { alternatives: arrayOf('string') },
  CachedResult: { max_staleness: DURATION },
  LlmRecovery: { max_recovery_attempts: 'u32' },
  Escalate: { queue: 'string', context_snapshot: 'bool' },
  DeadLetter: null,
});

/** loop_types.rs `LoopConfig` (`shared_budget` is `#[serde(skip)]`; the orga-adaptive fields are skipped when unset). */
const LOOP_CONFIG = obj(
  {
    max_iterations: 'u32',
    max_total_tokens: 'u32',
    timeout: DURATION,
    default_recovery: RECOVERY_STRATEGY,
    tool_timeout: DURATION,
    max_concurrent_tools: 'uint',
    context_token_budget: 'uint',
  },
  {
    temperature: 'float',
    max_output_tokens: 'u32',
    max_delegation_depth: 'u32',
    delegation_depth: 'u32',
    delegation_chain: arrayOf('string'),
    tool_definitions: arrayOf('json'),
    tool_choice: 'json',
  },
);

/** run_audit.rs `RunAuditReference`. */
const RUN_AUDIT_REFERENCE = obj({ run_id: 'uuid', path: 'string', public_key: 'hex64' });

/** budget/journal.rs `ScopeIdentity` (deny_unknown_fields). */
const SCOPE_IDENTITY = obj({ scope: 'uint', parent: nullable('uint'), limit: 'u32' });

/** budget/journal.rs `InferenceReservation` (deny_unknown_fields: nothing of ours goes here). */
const INFERENCE_RESERVATION = obj({
  id: 'uuid',
  root_id: 'uuid',
  ancestors: arrayOf(SCOPE_IDENTITY),
  input_tokens: 'u32',
  output_tokens: 'u32',
  agent_id: 'uuid',
  audit: nullable(RUN_AUDIT_REFERENCE),
  iteration: 'u32',
  provider: 'string',
  model: 'string',
  request_hash: 'sha256',
  request_bytes: 'uint',
});

/** budget.rs `BudgetSnapshot`. */
const BUDGET_SNAPSHOT = obj({
  root_id: 'uuid',
  scope: 'uint',
  limit: 'u32',
  usage: USAGE,
  reserved_tokens: 'u32',
  uncertain_tokens: 'u32',
  available_tokens: 'u32',
  exceeded: 'bool',
});

/** loop_types.rs `ProposedAction`. */
const PROPOSED_ACTION = variants({
  ToolCall: { call_id: 'string', name: 'string', arguments: 'string' },
  Delegate: { call_id: 'string', target: 'string', message: 'string' },
  Respond: { content: 'string' },
  Terminate: { reason: 'string', output: 'string' },
});

/** loop_types.rs `Observation`. */
const OBSERVATION = obj({ source: 'string', content: 'string', is_error: 'bool' }, { call_id: 'string', metadata: 'json' });

/** The registered definition a run answers for (`execution_context.agent_definition`, a free-form map in Symbiont). */
const AGENT_DEFINITION = obj(
  { name: 'string', mode: 'string', surface: 'string', source_hash: 'sha256', declaration_hash: 'sha256', tools_enabled: 'bool' },
  { file: 'string' }, // ours: the project file that declares the agent
);

/** `Started.execution_context`: Symbiont's `HashMap<String, Value>`, with the entries its response route writes. */
const EXECUTION_CONTEXT = obj({} as Record<never, never>, {
  agent_definition: AGENT_DEFINITION,
  budget: obj({ root_id: 'uuid', scope: 'uint', limit: 'uint' }),
  source_policy: 'json',
  response_destination: 'json',
});

/** The `LoopEvent` variants of Symbiont's registered-response route, in the order a permitted run writes them. */
export const RECORDS = {
  Started: { agent_id: 'uuid', config: LOOP_CONFIG, execution_context: EXECUTION_CONTEXT },
  BudgetOpened: { root_id: 'uuid', limit: 'u32' },
  BudgetReservationStarted: { reservation: INFERENCE_RESERVATION },
  DirectInferenceRequested: {
    call_id: 'string',
    operation: 'string',
    provider: 'string',
    model: 'string',
    request_hash: 'sha256',
    request_bytes: 'uint',
    recipient: nullable('uuid'),
    recipient_definition_hash: nullable('sha256'),
    communication: nullable('json'),
  },
  DirectInferenceResponseReceived: { call_id: 'string', response_hash: 'sha256', response_bytes: 'uint' },
  DirectInferenceFinished: {
    call_id: 'string',
    reason: TERMINATION_REASON,
    response_hash: nullable('sha256'),
    response_bytes: 'uint',
    finish_reason: nullable(FINISH_REASON),
    usage: USAGE,
  },
  BudgetReservationFinished: { root_id: 'uuid', reservation_id: 'uuid', usage: USAGE, outcome: literal('confirmed', 'unknown', 'exceeded') },
  ReasoningComplete: { iteration: 'u32', actions: arrayOf(PROPOSED_ACTION), usage: USAGE },
  PolicyEvaluated: { iteration: 'u32', action_count: 'uint', denied_count: 'uint' },
  ToolsDispatched: { iteration: 'u32', tool_count: 'uint', duration: DURATION },
  ToolBatchCompleted: { iteration: 'u32', observations: arrayOf(OBSERVATION), duration: DURATION },
  ObservationsCollected: { iteration: 'u32', observation_count: 'uint' },
  BudgetUpdated: { budget: BUDGET_SNAPSHOT },
  Terminated: { reason: TERMINATION_REASON, iterations: 'u32', total_usage: USAGE, duration: DURATION },
} as const satisfies Record<string, Fields>;

/** Fields a record may have beyond those Symbiont requires: its `Option` and `default` fields, and ours. */
const OPTIONAL_FIELDS = {
  Started: {},
  DirectInferenceRequested: {},
  DirectInferenceFinished: {
    provider_finish_reason: nullable('string'), // ours: the provider's own finish value, when the finish table names it
    error: PROVIDER_ERROR, // ours
    // ours: the attempts of this call that failed before the one this finish records (retries share the call)
    earlier_attempts: arrayOf(obj({ message: 'string', error: PROVIDER_ERROR })),
  },
  PolicyEvaluated: {
    approved_calls: arrayOf('json'),
    denied_calls: arrayOf('json'),
    // ours: what decided, and the exact text judged
    denied_by: literal('cedar', 'finish_rule'),
    decision: literal('allow', 'deny'),
    determining_policies: arrayOf('string'),
    errors: arrayOf('string'),
    response_hash: 'sha256',
    response_bytes: 'uint',
  },
} as const satisfies Partial<Record<keyof typeof RECORDS, Fields>>;

export type EventName = keyof typeof RECORDS;
type Optional<N extends EventName> = N extends keyof typeof OPTIONAL_FIELDS
  ? { [K in keyof (typeof OPTIONAL_FIELDS)[N]]?: InferFields<(typeof OPTIONAL_FIELDS)[N]>[K] }
  : unknown;
/** The fields of event `N`, as every writer must give them. */
export type EventFields<N extends EventName> = InferFields<(typeof RECORDS)[N]> & Optional<N>;
/** One record's event: `{ Name: { ...fields } }`. */
export type JournalEvent = { [N in EventName]: { [K in N]: EventFields<N> } }[EventName];

export type Usage = EventFields<'Terminated'>['total_usage'];
export type Duration = EventFields<'Terminated'>['duration'];
export type TerminationReason = EventFields<'Terminated'>['reason'];
export type BudgetSnapshot = EventFields<'BudgetUpdated'>['budget'];
export type ProposedAction = EventFields<'ReasoningComplete'>['actions'][number];
export type SymbiontFinishReason = NonNullable<EventFields<'DirectInferenceFinished'>['finish_reason']>;

/** Builds one record's event; the compiler checks its fields against the declaration. */
export function journalEvent<N extends EventName>(name: N, fields: NoInfer<EventFields<N>>): JournalEvent {
  return { [name]: fields } as unknown as JournalEvent;
}

/** Symbiont's response-route records, as `audit inspect` reads them. */
export const SYMBIONT_FORMAT: RecordFormat = {
  name: 'symbiont-response-route',
  events: Object.fromEntries(
    Object.entries(RECORDS).map(([name, required]) => {
      const optional: Fields = (OPTIONAL_FIELDS as Partial<Record<string, Fields>>)[name] ?? {};
      // serde fills these when absent: `execution_context` (default) and `communication` (an Option).
      const { execution_context, communication, ...rest } = required as Fields;
      const defaulted: Fields = { ...(execution_context ? { execution_context } : {}), ...(communication ? { communication } : {}) };
      return [name, { required: rest, optional: { ...optional, ...defaulted } }];
    }),
  ),
  requireFields: true,
};

/** Whether the entry's `iteration` for event `name` is the one Symbiont's route writes (0 before the reasoning step's records, else the run's iteration). */
export const ENTRY_ITERATION_ZERO: ReadonlySet<string> = new Set(['Started', 'BudgetOpened', 'BudgetReservationStarted', 'BudgetReservationFinished']);

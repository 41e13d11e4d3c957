import { randomUUID } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../canonical-json.js';
import type { AuditReference, RunDefinition } from '../worker-protocol.js';
import {
  type BudgetSnapshot,
  type Duration,
  type EventFields,
  journalEvent,
  type JournalEvent,
  type ProposedAction,
  type TerminationReason,
  type Usage,
} from './journal-records.js';

// The records of one `invoke_agent` run, in the order Symbiont's registered-response route writes
// them (docs/audit.md, "The records of a run", has the table per outcome and the source). Every
// writer of a run's journal (the worker, the owner that ends a cancelled or orphaned run, the owner
// that claims a run no worker started) builds its records here, so the three write one format.
//
// The route's shared token budget is kept as Symbiont keeps it (budget.rs, budget/journal.rs): one
// root of ROUTE_TOKEN_LIMIT tokens; each provider call reserves its input estimate plus its output
// tokens before it is requested, and is settled by the usage the provider reports. Symbiont's
// classifier recomputes each settlement, so the arithmetic here must be exactly its own.

type ExecutionContext = NonNullable<EventFields<'Started'>['execution_context']>;
/** One failed attempt of a provider call, as its finish lists it (ours, `earlier_attempts`). */
type FailedAttempt = NonNullable<EventFields<'DirectInferenceFinished'>['earlier_attempts']>[number];

export const RUN_SURFACE = 'mcp-server';
export const RUN_MODE = 'text_response';
/** LoopConfig.max_total_tokens on the response route, and the budget root's limit (response_run.rs). */
export const ROUTE_TOKEN_LIMIT = 16_384;
/** LoopConfig.timeout on the response route: the agent's timeout, at most this. */
const ROUTE_TIMEOUT_CAP_SECS = 120;
/** Symbiont's input reservation: the request's bytes (a bound on its tokens) plus this margin. */
const INPUT_RESERVATION_MARGIN = 1024;
/** LoopConfig.temperature's default (an f32 that serde widens to f64 when the record is written). */
const LOOP_TEMPERATURE = Math.fround(0.3);

export const ZERO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** One record and its entry's `iteration`, which Symbiont's route sets per record (0 before the reasoning step). */
export interface RunRecord {
  iteration: number;
  event: JournalEvent;
}

/** A Symbiont `sha256:<hex>` digest of a value's canonical JSON, and the byte length of that JSON. */
export function digestJson(value: unknown): { digest: string; bytes: number } {
  const text = canonicalJson(value);
  return { digest: `sha256:${sha256Hex(text)}`, bytes: Buffer.byteLength(text, 'utf8') };
}

/** A hex SHA-256 as Symbiont writes hashes in records. */
export function symbiontHash(hex: string): string {
  return `sha256:${hex}`;
}

export function durationSince(startedAtMs: number, nowMs: number = Date.now()): Duration {
  const ms = Math.max(0, nowMs - startedAtMs);
  return { secs: Math.floor(ms / 1000), nanos: Math.round((ms % 1000) * 1_000_000) };
}

const NO_TIME: Duration = { secs: 0, nanos: 0 };

function addUsage(a: Usage, b: Usage): Usage {
  const cap = (n: number): number => Math.min(n, 0xffff_ffff);
  return {
    prompt_tokens: cap(a.prompt_tokens + b.prompt_tokens),
    completion_tokens: cap(a.completion_tokens + b.completion_tokens),
    total_tokens: cap(a.total_tokens + b.total_tokens),
  };
}

export type SettlementOutcome = 'confirmed' | 'unknown' | 'exceeded';

/**
 * Symbiont's settlement rule (budget/journal.rs): no usage reported is `unknown`; usage that does not
 * add up, or is more than was reserved, is `exceeded`; anything else `confirmed`.
 */
export function settlementOutcome(usage: Usage, inputTokens: number, outputTokens: number): SettlementOutcome {
  if (usage.prompt_tokens === 0 && usage.completion_tokens === 0 && usage.total_tokens === 0) return 'unknown';
  const sum = usage.prompt_tokens + usage.completion_tokens;
  if (sum > 0xffff_ffff || usage.total_tokens < sum || usage.total_tokens > inputTokens + outputTokens || usage.completion_tokens > outputTokens)
    return 'exceeded';
  return 'confirmed';
}

export interface Reservation {
  id: string;
  input: number;
  output: number;
}

/** The route's token budget, as Symbiont's `SharedBudget` accounts for it. */
export class RunBudget {
  usage: Usage = ZERO_USAGE;
  reserved = 0;
  uncertain = 0;
  exceeded = false;
  private readonly open = new Map<string, Reservation>();

  constructor(
    readonly rootId: string,
    readonly limit: number = ROUTE_TOKEN_LIMIT,
  ) {}

  get available(): number {
    return Math.max(0, this.limit - this.usage.total_tokens - this.reserved - this.uncertain);
  }

  reserve(input: number, output: number): Reservation {
    const reservation = { id: randomUUID(), input, output };
    this.open.set(reservation.id, reservation);
    this.reserved += input + output;
    return reservation;
  }

  /** Re-opens a reservation read back from a journal (an owner ending a run its worker left). */
  adopt(reservation: Reservation): void {
    this.open.set(reservation.id, reservation);
    this.reserved += reservation.input + reservation.output;
  }

  settle(id: string, usage: Usage): SettlementOutcome {
    const reservation = this.open.get(id);
    if (reservation === undefined) throw new Error(`reservation ${id} is not open`);
    this.open.delete(id);
    const amount = reservation.input + reservation.output;
    this.reserved -= amount;
    const outcome = settlementOutcome(usage, reservation.input, reservation.output);
    if (outcome === 'unknown') this.uncertain += amount;
    else {
      this.usage = addUsage(this.usage, usage);
      if (outcome === 'exceeded') this.exceeded = true;
    }
    return outcome;
  }

  /** Reservations never settled (a cancel) count in full as uncertain, as a dropped reservation does in Symbiont. */
  abandonOpen(): void {
    for (const reservation of this.open.values()) {
      this.reserved -= reservation.input + reservation.output;
      this.uncertain += reservation.input + reservation.output;
    }
    this.open.clear();
  }

  /** The budget's state, to go back to when the records that changed it could not be made durable. */
  checkpoint(): () => void {
    const saved = { usage: this.usage, reserved: this.reserved, uncertain: this.uncertain, exceeded: this.exceeded, open: new Map(this.open) };
    return () => {
      Object.assign(this, { usage: saved.usage, reserved: saved.reserved, uncertain: saved.uncertain, exceeded: saved.exceeded });
      this.open.clear();
      for (const [id, reservation] of saved.open) this.open.set(id, reservation);
    };
  }

  snapshot(): BudgetSnapshot {
    return {
      root_id: this.rootId,
      scope: 0,
      limit: this.limit,
      usage: this.usage,
      reserved_tokens: this.reserved,
      uncertain_tokens: this.uncertain,
      available_tokens: this.available,
      exceeded: this.exceeded,
    };
  }
}

/** The typed request as Symbiont hashes it: `Conversation` and `InferenceOptions` (docs/audit.md, "Hashes"). */
export interface HashedRequest {
  conversation: { messages: { role: 'system' | 'user'; content: string }[] };
  options: { max_tokens: number; model: string; response_format: { type: 'text' } };
}

/** Symbiont's `Terminated.iterations`: 1 once the reasoning step ran to its policy decision, else 0. */
export type Iterations = 0 | 1;

/** Builds the records of one run, in Symbiont's order, keeping the budget they report. */
export class RunRecords {
  readonly budget: RunBudget;

  constructor(
    private readonly definition: RunDefinition,
    private readonly startedAtMs: number,
  ) {
    // The route's budget, whatever the request: retries share the call's one reservation.
    this.budget = new RunBudget(randomUUID(), ROUTE_TOKEN_LIMIT);
  }

  /** `Started` and `BudgetOpened`: the first two records of every run. */
  opening(): RunRecord[] {
    const { definition } = this;
    const rootId: string = this.budget.rootId;
    const limit: number = this.budget.limit;
    const timeoutSecs = Math.min(Math.ceil(definition.timeoutMs / 1000), ROUTE_TIMEOUT_CAP_SECS);
    const executionContext: ExecutionContext = {
      agent_definition: {
        name: definition.declaredName,
        file: definition.file,
        source_hash: symbiontHash(definition.sourceHash),
        declaration_hash: symbiontHash(definition.declarationHash),
        mode: RUN_MODE,
        surface: RUN_SURFACE,
        tools_enabled: false,
      },
      budget: { root_id: rootId, scope: 0, limit },
    };
    const started: EventFields<'Started'> = {
      agent_id: definition.principal,
      config: {
        max_iterations: 1,
        max_total_tokens: this.budget.limit,
        timeout: { secs: timeoutSecs, nanos: 0 },
        default_recovery: { Retry: { max_attempts: 2, base_delay: { secs: 0, nanos: 500_000_000 } } },
        tool_timeout: { secs: 30, nanos: 0 },
        max_concurrent_tools: 5,
        context_token_budget: 32_000,
        temperature: LOOP_TEMPERATURE,
        max_output_tokens: 4096,
        max_delegation_depth: 3,
        delegation_depth: 0,
        delegation_chain: [],
      },
      execution_context: executionContext,
    };
    return [
      { iteration: 0, event: journalEvent('Started', started) },
      { iteration: 0, event: journalEvent('BudgetOpened', { root_id: this.budget.rootId, limit: this.budget.limit }) },
    ];
  }

  /** The input reservation Symbiont's provider makes for a request of `requestBytes` bytes. */
  static inputTokens(requestBytes: number): number {
    return requestBytes + INPUT_RESERVATION_MARGIN;
  }

  /**
   * Reserves a provider call's tokens: the output tokens are what the budget still allows, at most
   * `maxOutputTokens`. Returns undefined when not one output token is left (the run ends MaxTokens).
   */
  reserve(inputTokens: number, maxOutputTokens: number): Reservation | undefined {
    const output = Math.min(this.budget.available - inputTokens, maxOutputTokens);
    if (output <= 0) return undefined;
    return this.budget.reserve(inputTokens, output);
  }

  /** `BudgetReservationStarted` and `DirectInferenceRequested`: durable before the request leaves. */
  request(
    reservation: Reservation,
    call: { callId: string; provider: string; model: string; requestDigest: string; requestBytes: number },
    /** Symbiont's `RunAuditReference` has the same three fields. */
    audit: AuditReference,
  ): RunRecord[] {
    const { definition } = this;
    return [
      {
        iteration: 0,
        event: journalEvent('BudgetReservationStarted', {
          reservation: {
            id: reservation.id,
            root_id: this.budget.rootId,
            ancestors: [{ scope: 0, parent: null, limit: this.budget.limit }],
            input_tokens: reservation.input,
            output_tokens: reservation.output,
            agent_id: definition.principal,
            audit,
            iteration: 0,
            provider: call.provider,
            model: call.model,
            request_hash: call.requestDigest,
            request_bytes: call.requestBytes,
          },
        }),
      },
      {
        iteration: 1,
        event: journalEvent('DirectInferenceRequested', {
          call_id: call.callId,
          operation: RUN_SURFACE,
          provider: call.provider,
          model: call.model,
          request_hash: call.requestDigest,
          request_bytes: call.requestBytes,
          recipient: definition.principal,
          recipient_definition_hash: symbiontHash(definition.sourceHash),
          communication: null,
        }),
      },
    ];
  }

  /** `DirectInferenceResponseReceived`, `DirectInferenceFinished` and the settlement: durable before the policy runs. */
  response(
    reservation: Reservation,
    call: {
      callId: string;
      responseDigest: string;
      responseBytes: number;
      finishReason: EventFields<'DirectInferenceFinished'>['finish_reason'];
      providerFinishReason: string | null;
      usage: Usage;
      /** The attempts of this call that failed before the one answered (ours). */
      earlierAttempts: FailedAttempt[];
    },
  ): { records: RunRecord[]; outcome: SettlementOutcome } {
    const outcome = this.budget.settle(reservation.id, call.usage);
    return {
      outcome,
      records: [
        {
          iteration: 1,
          event: journalEvent('DirectInferenceResponseReceived', {
            call_id: call.callId,
            response_hash: call.responseDigest,
            response_bytes: call.responseBytes,
          }),
        },
        {
          iteration: 1,
          event: journalEvent('DirectInferenceFinished', {
            call_id: call.callId,
            reason: 'Completed',
            response_hash: call.responseDigest,
            response_bytes: call.responseBytes,
            finish_reason: call.finishReason,
            provider_finish_reason: call.providerFinishReason,
            usage: call.usage,
            ...(call.earlierAttempts.length > 0 ? { earlier_attempts: call.earlierAttempts } : {}),
          }),
        },
        this.settlement(reservation.id, call.usage, outcome),
      ],
    };
  }

  /**
   * A provider call whose every attempt failed: its finish (an error, no response; the last attempt's
   * words and identifiers, the earlier attempts listed) and its reservation settled with no usage.
   */
  failedCall(reservation: Reservation, callId: string, attempts: readonly FailedAttempt[]): RunRecord[] {
    const last = attempts.at(-1);
    if (last === undefined) throw new Error('a failed call has at least one failed attempt');
    return [
      {
        iteration: 1,
        event: journalEvent('DirectInferenceFinished', {
          call_id: callId,
          reason: { Error: { message: last.message } },
          response_hash: null,
          response_bytes: 0,
          finish_reason: null,
          usage: ZERO_USAGE,
          error: last.error,
          ...(attempts.length > 1 ? { earlier_attempts: attempts.slice(0, -1) } : {}),
        }),
      },
      this.settleUnknown(reservation),
    ];
  }

  /** A reservation settled with no usage (the call's result is not known): what Symbiont's deadline and failure paths write. */
  settleUnknown(reservation: Reservation): RunRecord {
    const outcome = this.budget.settle(reservation.id, ZERO_USAGE);
    return this.settlement(reservation.id, ZERO_USAGE, outcome);
  }

  private settlement(reservationId: string, usage: Usage, outcome: SettlementOutcome): RunRecord {
    return { iteration: 0, event: journalEvent('BudgetReservationFinished', { root_id: this.budget.rootId, reservation_id: reservationId, usage, outcome }) };
  }

  /** `ReasoningComplete`: the step's proposed actions (the answer's text, or the tool calls the model proposed). */
  reasoning(actions: ProposedAction[], usage: Usage): RunRecord {
    return { iteration: 1, event: journalEvent('ReasoningComplete', { iteration: 1, actions, usage }) };
  }

  /** `PolicyEvaluated` for the one action of the step, and the dispatch records that follow it (nothing is dispatched). */
  decision(fields: EventFields<'PolicyEvaluated'>, complete: boolean): RunRecord[] {
    const records: RunRecord[] = [{ iteration: 1, event: journalEvent('PolicyEvaluated', fields) }];
    if (!complete) return records;
    return [
      ...records,
      { iteration: 1, event: journalEvent('ToolsDispatched', { iteration: 1, tool_count: 0, duration: NO_TIME }) },
      { iteration: 1, event: journalEvent('ToolBatchCompleted', { iteration: 1, observations: [], duration: NO_TIME }) },
      { iteration: 1, event: journalEvent('ObservationsCollected', { iteration: 1, observation_count: 0 }) },
    ];
  }

  /** `BudgetUpdated` and `Terminated`: the run's last two records. Open reservations count as uncertain. */
  ending(reason: TerminationReason, iterations: Iterations): [RunRecord, RunRecord] {
    return runEnding(this.budget, this.startedAtMs, reason, iterations);
  }
}

/** `BudgetUpdated` and `Terminated` for a run whose budget and start are `budget` and `startedAtMs` (also an owner's, ending a run its worker left). */
export function runEnding(budget: RunBudget, startedAtMs: number, reason: TerminationReason, iterations: Iterations): [RunRecord, RunRecord] {
  budget.abandonOpen();
  const snapshot = budget.snapshot();
  return [
    { iteration: iterations, event: journalEvent('BudgetUpdated', { budget: snapshot }) },
    { iteration: iterations, event: journalEvent('Terminated', { reason, iterations, total_usage: snapshot.usage, duration: durationSince(startedAtMs) }) },
  ];
}

/** Terminated alone, for a journal whose budget could not be read back (an owner ending a run of the older format). */
export function bareTerminal(reason: TerminationReason, startedAtMs: number): RunRecord {
  return { iteration: 0, event: journalEvent('Terminated', { reason, iterations: 0, total_usage: ZERO_USAGE, duration: durationSince(startedAtMs) }) };
}

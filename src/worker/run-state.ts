import type { JournalWriter } from '../shared/journal/journal-writer.js';
import type { EventFields, TerminationReason } from '../shared/journal/journal-records.js';
import type { Reservation, RunRecord, RunRecords, SettlementOutcome } from '../shared/journal/run-records.js';
import type { AuditReference } from '../shared/worker-protocol.js';

// Where one run stands in its journal, and the one place that decides what each step writes
// (docs/architecture.md, "A run's states"). invocation.ts says when each step happens; the
// records themselves are built by run-records.ts, in Symbiont's order (docs/audit.md).
//
//   state             entered when                                 a failure in it still writes, before BudgetUpdated and Terminated
//   no_journal        the task starts                              nothing: there is no journal (refused, or claimed by the owner)
//   journal_open      the journal file exists                      Started, BudgetOpened
//   request_durable   the request record is durable (an attempt    the call's settlement with no usage, unless a cancel stopped it
//                     of the call is in flight)
//   attempt_failed    the call's last attempt failed; a retry may  the call's finish (an error, with the earlier attempts) and settlement
//                     follow
//   response_durable  the response records are durable             nothing more
//   ended             the terminal record is durable               (nothing is written any more)
//
// Transitions (the methods below); each that writes is one write and one sync:
//   no_journal       -> journal_open      journalCreated    nothing yet (the file exists)
//   journal_open     -> request_durable   firstRequest      Started, BudgetOpened, the reservation, DirectInferenceRequested
//   request_durable  -> attempt_failed    attemptFailed     nothing: the finish waits for the call's last attempt
//   attempt_failed   -> request_durable   retrying          nothing: a retry is the same request, under the same record
//   request_durable  -> response_durable  responseReceived  DirectInferenceResponseReceived, DirectInferenceFinished, the settlement
//   response_durable -> ended             decided           ReasoningComplete, PolicyEvaluated (and the dispatch records), BudgetUpdated, Terminated
//   any of the four between -> ended      failed            what the state still lacks (above), BudgetUpdated, Terminated
//
// Retries live inside the one provider call: Symbiont's writer refuses a new reservation or request
// after a finish that is not Completed (symbiont-writer-rule.ts), so a run has one reservation, one
// request and one finish, and the finish lists the attempts that failed before its own outcome.
//
// A write that fails leaves the state, and the budget, as they were, so the run's end records
// what the journal holds.

export type RunStateName = 'no_journal' | 'journal_open' | 'request_durable' | 'attempt_failed' | 'response_durable' | 'ended';

/** A provider call whose request record is durable: its id and its token reservation, until its finish is recorded. */
export interface OpenCall {
  callId: string;
  reservation: Reservation;
}

/** One failed attempt of the call: our words and the identifiers its finish keeps (journal-records.ts). */
export type FailedAttempt = NonNullable<EventFields<'DirectInferenceFinished'>['earlier_attempts']>[number];

/** What a step that sends a request hands over: the call it opens and its request records. */
export interface CallRecords {
  call: OpenCall;
  records: RunRecord[];
}

type State =
  | { name: 'no_journal' }
  | { name: 'journal_open' }
  /** `earlier`: the attempts of this call that failed before the one in flight. */
  | { name: 'request_durable'; call: OpenCall; earlier: FailedAttempt[] }
  /** `failed`: the call's attempts so far, all failed, the last one being the call's outcome if no retry follows. */
  | { name: 'attempt_failed'; call: OpenCall; failed: FailedAttempt[] }
  | { name: 'response_durable' }
  | { name: 'ended' };

export class RunState {
  private state: State = { name: 'no_journal' };
  private journal: { writer: JournalWriter; audit: AuditReference } | undefined;

  constructor(
    /** The run's records and budget; until the request is known (a run stopped before), Symbiont's budget. */
    public records: RunRecords,
  ) {}

  get name(): RunStateName {
    return this.state.name;
  }

  /** The journal's writer, once it exists. */
  get writer(): JournalWriter | undefined {
    return this.journal?.writer;
  }

  /** The journal's reference, once it exists. */
  get audit(): AuditReference | undefined {
    return this.journal?.audit;
  }

  /** no_journal -> journal_open: the journal file was created; nothing is in it yet. */
  journalCreated(writer: JournalWriter, audit: AuditReference): void {
    this.expect('no_journal');
    this.journal = { writer, audit };
    this.state = { name: 'journal_open' };
  }

  /**
   * journal_open -> request_durable: Started, BudgetOpened, the reservation and
   * DirectInferenceRequested share one write and one sync: the protocol needs the request record
   * durable before the request leaves, and what Symbiont writes before it ahead of it in the chain.
   */
  async firstRequest<Call extends CallRecords>(nextCall: () => Call): Promise<Call> {
    this.expect('journal_open');
    let next: Call | undefined;
    await this.durably(() => {
      next = nextCall();
      return [...this.records.opening(), ...next.records];
    });
    this.state = { name: 'request_durable', call: next!.call, earlier: [] };
    return next!;
  }

  /** request_durable -> attempt_failed: the attempt in flight failed; its finish waits for the call's last attempt. */
  attemptFailed(attempt: FailedAttempt): void {
    const { call, earlier } = this.expect('request_durable');
    this.state = { name: 'attempt_failed', call, failed: [...earlier, attempt] };
  }

  /** attempt_failed -> request_durable: a retry of the same request, under the request record already durable. */
  retrying(): void {
    const { call, failed } = this.expect('attempt_failed');
    this.state = { name: 'request_durable', call, earlier: failed };
  }

  /**
   * request_durable -> response_durable: the response records and the reservation's settlement, durable
   * (one write, one sync) before the policy runs; `earlier` lists the attempts that failed before it.
   */
  async responseReceived(
    build: (call: OpenCall, earlier: FailedAttempt[]) => { records: RunRecord[]; outcome: SettlementOutcome },
  ): Promise<SettlementOutcome> {
    const { call, earlier } = this.expect('request_durable');
    let received: ReturnType<typeof build> | undefined;
    await this.durably(() => {
      received = build(call, earlier);
      return received.records;
    });
    this.state = { name: 'response_durable' };
    return received!.outcome;
  }

  /**
   * response_durable -> ended: the step's reasoning, its decision (and, unless the run was stopped,
   * the dispatch records), BudgetUpdated and Terminated, durable together before any text leaves.
   * A stopped run's end is what a cancel waits for: synced at once (journal-writer.ts).
   */
  async decided(reasoning: RunRecord, decision: EventFields<'PolicyEvaluated'>, reason: TerminationReason, stopped: boolean): Promise<void> {
    this.expect('response_durable');
    const [budgetUpdated, terminated] = this.records.ending(reason, stopped ? 0 : 1);
    await this.journal!.writer.appendTerminal(terminated, [reasoning, ...this.records.decision(decision, !stopped), budgetUpdated], { urgent: stopped });
    this.state = { name: 'ended' };
  }

  /**
   * journal_open, request_durable, attempt_failed or response_durable -> ended, after a failure:
   * the records the state still lacks share the terminal record's sync; if they cannot be written
   * (a tampered file), the terminal record is tried alone, once the opening records are durable.
   * As in Symbiont's route, a call stopped by a cancel keeps no finish and no settlement (its
   * effect is unknown), and one stopped by the deadline or an error is settled with no usage; a
   * call whose last attempt failed gets its finish (an error) and its settlement.
   * Returns whether the terminal record is durable.
   */
  async failed(reason: TerminationReason, cancelled: boolean): Promise<boolean> {
    const { state } = this;
    if (state.name === 'no_journal' || state.name === 'ended') throw new Error(`a run in state ${state.name} has no end to write`);
    const writer = this.journal!.writer;
    const preceding: RunRecord[] =
      state.name === 'journal_open'
        ? this.records.opening()
        : state.name === 'attempt_failed'
          ? this.records.failedCall(state.call.reservation, state.call.callId, state.failed)
          : state.name === 'request_durable' && !cancelled
            ? [this.records.settleUnknown(state.call.reservation)]
            : [];
    const [budgetUpdated, terminated] = this.records.ending(reason, 0);
    const urgent = { urgent: true };
    const durable = await writer.appendTerminal(terminated, [...preceding, budgetUpdated], urgent).then(
      () => true,
      () =>
        state.name !== 'journal_open'
          ? writer.appendTerminal(terminated, [], urgent).then(
              () => true,
              () => false,
            )
          : false,
    );
    if (durable) this.state = { name: 'ended' };
    return durable;
  }

  // The budget follows the records: a group that cannot be made durable leaves it as it was.
  private async durably(build: () => RunRecord[]): Promise<void> {
    const restore = this.records.budget.checkpoint();
    try {
      await this.journal!.writer.appendAll(build());
    } catch (err) {
      restore();
      throw err;
    }
  }

  private expect<Name extends RunStateName>(name: Name): Extract<State, { name: Name }> {
    if (this.state.name !== name) throw new Error(`run state ${this.state.name}, expected ${name}`);
    return this.state as Extract<State, { name: Name }>;
  }
}

// The records Symbiont's registered-response route writes for each outcome, in order, as
// docs/audit.md ("The records of a run") tabulates them from its source (jaschadub/Symbiont at
// 3afac162d7a12eaabc4b6c2a0b7f2b5745b27190: response_run.rs, reasoning_loop.rs, phases.rs,
// budget/journal.rs). Tests compare the journals the server writes with these, and a docs test
// compares this table with the one in docs/audit.md.

const OPENING = ['Started', 'BudgetOpened'];
const REQUEST = ['BudgetReservationStarted', 'DirectInferenceRequested'];
const RESPONSE = ['DirectInferenceResponseReceived', 'DirectInferenceFinished', 'BudgetReservationFinished'];
const DISPATCH = ['ToolsDispatched', 'ToolBatchCompleted', 'ObservationsCollected'];
const ENDING = ['BudgetUpdated', 'Terminated'];
/** A provider call that failed: its finish, an error, and its reservation settled with no usage. */
const FAILED_CALL = ['DirectInferenceFinished', 'BudgetReservationFinished'];

export const ROUTE_SEQUENCES = {
  /** The answer released: 14 records. */
  permitted: [...OPENING, ...REQUEST, ...RESPONSE, 'ReasoningComplete', 'PolicyEvaluated', ...DISPATCH, ...ENDING],
  /** Denied by Cedar, or withheld by the finish rule (tool call, truncation, filter): 14 records, ending MaxIterations. */
  denied: [...OPENING, ...REQUEST, ...RESPONSE, 'ReasoningComplete', 'PolicyEvaluated', ...DISPATCH, ...ENDING],
  /** The provider failed, after any retries (they share the one call): the finish is an error. */
  providerFailed: [...OPENING, ...REQUEST, ...FAILED_CALL, ...ENDING],
  /** Symbiont's early stops, a refusal or an answer with no text and no tool call: answered, settled, then ended with an Error. */
  noProgress: [...OPENING, ...REQUEST, ...RESPONSE, ...ENDING],
  /** The request leaves no output token in the route's budget: ended MaxTokens before any call. */
  overBudget: [...OPENING, ...ENDING],
  /** The deadline passed during the provider call: no finish, the reservation settled as unknown, Timeout. */
  deadline: [...OPENING, ...REQUEST, 'BudgetReservationFinished', ...ENDING],
  /** Cancelled during the provider call: no finish and no settlement. */
  cancelledDuringCall: [...OPENING, ...REQUEST, ...ENDING],
  /** Cancelled before the provider call. */
  cancelledBeforeCall: [...OPENING, ...ENDING],
  /** A response too large to keep, or answered after the call failed in another way: the call stays without its finish. */
  oversize: [...OPENING, ...REQUEST, 'BudgetReservationFinished', ...ENDING],
  /** The answer holds the provider key: settled, then ended, and the answer never written. */
  keyInAnswer: [...OPENING, ...REQUEST, ...RESPONSE, ...ENDING],
} as const;

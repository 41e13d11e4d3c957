// Symbiont's writer rule (ProtectedJournal::append in protected_journal.rs, jaschadub/Symbiont at
// 3afac162d7a12eaabc4b6c2a0b7f2b5745b27190): once a record with an unconfirmed outcome is in the
// journal, no record that starts an effect may follow; the run must be reconciled, not continued.
// A journal that breaks it is one Symbiont's own runtime could never have written, so the journal
// writer refuses such a record (journal-writer.ts) before it is signed. Only the variants this
// server's route writes are listed; Symbiont's lists hold more (tool, delegation, delivery events).

/** `starts_effect`: the records that begin something whose outcome must later be confirmed. */
const STARTS_EFFECT: ReadonlySet<string> = new Set(['Started', 'BudgetReservationStarted', 'DirectInferenceRequested']);

/** `has_unconfirmed_outcome`: a provider call's finish, or the run's end, whose reason is not `Completed`. */
export function hasUnconfirmedOutcome(name: string, fields: Record<string, unknown>): boolean {
  return (name === 'DirectInferenceFinished' || name === 'Terminated') && fields.reason !== 'Completed';
}

export function startsEffect(name: string): boolean {
  return STARTS_EFFECT.has(name);
}

/** Symbiont's own words for the refusal. */
export const UNCONFIRMED_OUTCOME_REFUSAL = 'execution stopped after an unconfirmed outcome; reconciliation is required';

// Why a model stopped, in one provider-neutral vocabulary. Each wire format maps its own values into
// it in its declaration (wire-*.ts); finish-reasons.ts puts those maps into one table and explains a
// recorded finish in our words. Only `complete` is ever released to the MCP caller: every other
// value is a tool error saying what happened, and no model text leaves.

export type FinishReason = 'complete' | 'truncated' | 'refused' | 'filtered' | 'tool_use' | 'error' | 'unknown';

export const FINISH_REASONS: readonly FinishReason[] = ['complete', 'truncated', 'refused', 'filtered', 'tool_use', 'error', 'unknown'];

/** One value a wire format's finish field can hold, and what it means here. */
export interface FinishMapping {
  /** The provider's value; null stands for a missing or null field. */
  raw: string | null;
  finish: FinishReason;
  /** Our own words for the tool error, never the provider's. */
  explanation: string;
}

export const CUT_AT_OUTPUT_LIMIT = 'the answer was cut off at the output token limit';

export interface NormalizedFinish {
  finish: FinishReason;
  /** The provider's value when the table names it (so always one of our fixed words); null otherwise. */
  providerValue: string | null;
  /**
   * A value the table does not name, as the provider sent it (or its JSON type when it is not a
   * string), for standard error only: it is provider-chosen text, so neither the caller nor the
   * journal gets it.
   */
  unrecognized?: string;
}

/** Maps a provider's finish value through one wire format's rows; anything they do not name is `unknown`. */
export function normalizeWith(rows: readonly FinishMapping[], raw: unknown): NormalizedFinish {
  const missing = raw === undefined || raw === null;
  const row = rows.find((r) => (missing ? r.raw === null : r.raw === raw));
  if (row !== undefined) return { finish: row.finish, providerValue: row.raw };
  if (missing) return { finish: 'unknown', providerValue: null };
  return { finish: 'unknown', providerValue: null, unrecognized: typeof raw === 'string' ? raw : `a JSON ${Array.isArray(raw) ? 'array' : typeof raw}` };
}

const SHORT_IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/**
 * The value when it is a short identifier (letters, digits, `_ . : -`, at most 64 characters), else
 * null. Provider identifiers (request ids, error types) reach the journal only through this filter,
 * so no free text (a model's words, an echoed prompt) can ride along; the caller never gets them.
 */
export function shortIdentifier(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return typeof value === 'string' && SHORT_IDENTIFIER.test(value) ? value : null;
}

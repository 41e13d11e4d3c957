// Small readers for untrusted provider JSON: they check a shape and never throw on surprises.

/** Whether `value` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Symbiont's token counts are `u32` (inference.rs `Usage`). */
const U32_MAX = 0xffff_ffff;

/**
 * A non-negative integer token count, or null when absent or not a count. A count above 2^32-1
 * (Symbiont's `u32`) is clamped to it: such a count is more than any call reserves, so the
 * settlement is `exceeded` and the answer withheld, and the journal still holds only values
 * Symbiont's types read.
 */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? Math.min(value, U32_MAX) : null;
}

/** The value when it is a string, else null. */
export function optionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

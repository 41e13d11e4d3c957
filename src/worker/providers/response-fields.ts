// Small readers for untrusted provider JSON: they check a shape and never throw on surprises.

/** Whether `value` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A non-negative integer token count, or null when absent or not a count. */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** The value when it is a string, else null. */
export function optionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

// Shape checks for values of unknown type (parsed JSON, messages, options), written once.

/** Whether `value` is an object with string keys: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

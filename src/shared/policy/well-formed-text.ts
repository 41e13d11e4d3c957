// Strings cross into the Cedar wasm module as UTF-8; a lone UTF-16 surrogate cannot, and
// would either be replaced silently (changing a policy) or abort the call. Both are refused.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

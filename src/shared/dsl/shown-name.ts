import { DSL_MESSAGE_NAME_MAX_CHARS } from '../limits.js';

// Names and source snippets quoted in DSL diagnostics are cut short: a file
// may declare a name of hundreds of kilobytes, and a message that repeats it
// for every problem would make the answer grow with the product of the two.

/** `text` cut to `max` characters (never inside a surrogate pair), marked with `…` when cut. */
export function shownName(text: string, max = DSL_MESSAGE_NAME_MAX_CHARS): string {
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

// Text from elsewhere (Cedar's messages, network errors, file names, a caller's
// argument) shown on one line. Two ways, because the readers differ: a log
// entry or a refusal naming a path must keep every character (escaped), while
// another component's prose reads best folded into one short sentence.

/** How much folded prose one message shows; longer text is cut with an ellipsis. */
export const FOLDED_TEXT_MAX_CHARS = 400;

/**
 * Escapes control characters and line separators (`\n` as `\\n`, others as `\\uXXXX`), so the text
 * stays on one line and nothing is lost: for log entries and messages that name a path or a value.
 */
export function escapeToOneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/**
 * Folds every run of white space and control characters into one space, trims, and cuts at
 * `maxChars` with an ellipsis: for another component's prose (Cedar, the network) shown as one line.
 */
export function foldToOneLine(text: string, maxChars = FOLDED_TEXT_MAX_CHARS): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const flat = text.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  return flat.length > maxChars ? `${flat.slice(0, maxChars)}…` : flat;
}

// Text from elsewhere (Cedar's messages, network errors, file names, a caller's
// argument, strings signed into a journal) shown on one line. Two ways, because
// the readers differ: a log entry or a refusal naming a path must keep every
// character (escaped), while another component's prose reads best folded into
// one short sentence. Both leave nothing a terminal would act on: C0 and C1
// controls (ESC and CSI start the sequences that clear a screen or move the
// cursor, ECMA-48) and the bidirectional formatting characters that reorder
// what is shown (Unicode UAX #9: embeddings, overrides, isolates and marks)
// come out as \uXXXX escapes. Every writer of text for people uses these.

/** How much folded prose one message shows; longer text is cut with an ellipsis. */
const FOLDED_TEXT_MAX_CHARS = 400;

// C0 controls, DEL, C1 controls, line and paragraph separators, and the bidirectional formatting
// characters: ALM (U+061C), LRM and RLM (U+200E-F), LRE to RLO (U+202A-E), LRI to PDI (U+2066-9).
// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_FOR_TERMINALS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * Escapes control characters, line separators and bidirectional formatting characters (`\n` as
 * `\\n`, others as `\\uXXXX`), so the text stays on one line, shows as it is stored, and nothing is
 * lost: for log entries, CLI output and messages that name a path or a value.
 */
export function escapeToOneLine(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINALS, (c) => {
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
  // oxlint-disable-next-line no-control-regex -- matching control characters is the point
  const flat = escapeToOneLine(text.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim());
  return flat.length > maxChars ? `${flat.slice(0, maxChars)}…` : flat;
}

// Finds where each Cedar statement starts and ends in a file, so policies keep their
// source order and line numbers (the wasm API returns them sorted by generated id, without
// positions). Cedar has only `//` line comments; `;` outside strings and comments ends a
// policy. The result is checked against Cedar's own split before it is trusted.

export interface StatementSpan {
  /** UTF-16 offset of the first character of the statement (annotations included). */
  start: number;
  /** UTF-16 offset just past the terminating `;`. */
  end: number;
  text: string;
}

export function splitCedarStatements(source: string): StatementSpan[] {
  const spans: StatementSpan[] = [];
  let start = -1;
  let i = 0;
  const n = source.length;
  while (i < n) {
    const ch = source[i];
    if (ch === '/' && source[i + 1] === '/') {
      const eol = source.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i += 1;
      continue;
    }
    if (start === -1) start = i;
    if (ch === '"') {
      i += 1;
      while (i < n && source[i] !== '"') i += source[i] === '\\' ? 2 : 1;
      i += 1;
      continue;
    }
    if (ch === ';') {
      spans.push({ start, end: i + 1, text: source.slice(start, i + 1) });
      start = -1;
    }
    i += 1;
  }
  return spans;
}

/** 1-based line and column of a UTF-8 byte offset (Cedar reports byte offsets). */
export function lineColumnOfByteOffset(source: string, byteOffset: number): { line: number; column: number } {
  const bytes = Buffer.from(source, 'utf8');
  const prefix = bytes.subarray(0, Math.max(0, Math.min(byteOffset, bytes.length))).toString('utf8');
  const lines = prefix.split('\n');
  const last = lines[lines.length - 1] ?? '';
  return { line: lines.length, column: [...last].length + 1 };
}

/** UTF-8 byte length of the text before a UTF-16 offset. */
export function byteOffsetOf(source: string, utf16Offset: number): number {
  return Buffer.byteLength(source.slice(0, utf16Offset), 'utf8');
}

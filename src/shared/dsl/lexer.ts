import type { Token, TokenKind } from './tokens.js';

// Splits DSL text into tokens, following the token rules at the end of
// Symbiont's grammar.js (identifier, string, duration_literal, number,
// vault_url, comment). Like tree-sitter, it takes the longest match: `30s`
// is a duration, `1_000s` a number followed by the word `s`.
// White space and comments (`//` or `#` to the end of the line) separate tokens.

/** Operators and separators, longest first so that `==` is not read as `=` `=`. */
const PUNCTUATION = [
  '=>', '->', '==', '!=', '<=', '>=', '&&', '||', '+=', '-=', '*=', '/=', '%=',
  '{', '}', '(', ')', '[', ']', ',', ':', ';', '=', '<', '>', '+', '-', '*', '/', '%', '!', '.',
];

/** Duration units, longest first: `5months` is one duration, not `5m` then `onths`. */
const DURATION_UNITS = ['.seconds', '.minutes', '.hours', 'months', 's', 'm', 'h', 'd', 'w', 'y'];

const VAULT_PREFIX = 'vault://';

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isWordStart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z_]/.test(c);
const isWordChar = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_]/.test(c);
const isVaultChar = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_\-/.]/.test(c);

export function lex(src: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let line = 1;
  let lineStart = 0;

  const push = (kind: TokenKind, start: number, end: number, text = src.slice(start, end)): void => {
    tokens.push({ kind, text, start, end, line, column: start - lineStart + 1 });
  };

  while (pos < src.length) {
    const c = src[pos]!;
    if (c === '\n') {
      pos++;
      line++;
      lineStart = pos;
    } else if (/\s/.test(c)) {
      pos++;
    } else if (c === '#' || src.startsWith('//', pos)) {
      while (pos < src.length && src[pos] !== '\n') pos++;
    } else if (src.startsWith('/*', pos)) {
      push('invalid', pos, pos + 2, 'block comments (`/* */`) are not part of the language; start each comment line with `//` or `#`');
      pos += 2;
    } else if (c === '"') {
      const start = pos;
      const startLine = line;
      const startColumn = pos - lineStart + 1;
      const end = stringEnd(src, pos);
      // A string may span lines: keep the line count right for what follows.
      for (let i = pos; i < (end.at ?? src.length); i++) {
        if (src[i] === '\n') {
          line++;
          lineStart = i + 1;
        }
      }
      pos = end.at ?? src.length;
      const token: Token = end.problem
        ? { kind: 'invalid', text: end.problem, start, end: pos, line: startLine, column: startColumn }
        : { kind: 'string', text: src.slice(start, pos), start, end: pos, line: startLine, column: startColumn };
      tokens.push(token);
    } else if (isDigit(c)) {
      const end = Math.max(numberEnd(src, pos), durationEnd(src, pos));
      push(end === durationEnd(src, pos) ? 'duration' : 'number', pos, end);
      pos = end;
    } else if (src.startsWith(VAULT_PREFIX, pos) && isVaultChar(src[pos + VAULT_PREFIX.length])) {
      let end = pos + VAULT_PREFIX.length;
      while (isVaultChar(src[end])) end++;
      push('vault', pos, end);
      pos = end;
    } else if (isWordStart(c)) {
      let end = pos + 1;
      while (isWordChar(src[end])) end++;
      push('word', pos, end);
      pos = end;
    } else {
      const op = PUNCTUATION.find((p) => src.startsWith(p, pos));
      if (op) {
        push('punct', pos, pos + op.length);
        pos += op.length;
      } else {
        const char = String.fromCodePoint(src.codePointAt(pos)!);
        push('invalid', pos, pos + char.length, `unexpected character ${JSON.stringify(char)}; names are ASCII letters, digits and \`_\``);
        pos += char.length;
      }
    }
  }
  tokens.push({ kind: 'eof', text: '', start: src.length, end: src.length, line, column: src.length - lineStart + 1 });
  return tokens;
}

/** `"(\\.|[^"\\])*"`: a backslash escapes any character but a line break. */
function stringEnd(src: string, start: number): { at?: number; problem?: string } {
  let pos = start + 1;
  while (pos < src.length) {
    const c = src[pos];
    if (c === '"') return { at: pos + 1 };
    if (c === '\\') {
      if (pos + 1 >= src.length) break;
      if (src[pos + 1] === '\n' || src[pos + 1] === '\r') return { at: pos + 1, problem: 'a `\\` at the end of a line inside a string; a backslash escapes the character after it on the same line' };
      pos += 2;
    } else {
      pos++;
    }
  }
  return { problem: 'unterminated string: no closing `"` before end of file' };
}

/** `\d+(_\d+)*(\.\d+)?` */
function numberEnd(src: string, start: number): number {
  let pos = start;
  while (isDigit(src[pos])) pos++;
  while (src[pos] === '_' && isDigit(src[pos + 1])) {
    pos++;
    while (isDigit(src[pos])) pos++;
  }
  if (src[pos] === '.' && isDigit(src[pos + 1])) {
    pos++;
    while (isDigit(src[pos])) pos++;
  }
  return pos;
}

/** `\d+` then a unit; 0 when no unit follows the digits. */
function durationEnd(src: string, start: number): number {
  let pos = start;
  while (isDigit(src[pos])) pos++;
  const unit = DURATION_UNITS.find((u) => src.startsWith(u, pos));
  return unit ? pos + unit.length : 0;
}

import { TokenKind, TokenStream, type SyntaxDiagnostic } from './tokens.js';

// Hand-written scanner: one pass over UTF-16 code units, no regular
// expressions on the hot path, never throws. Problems become diagnostics and
// the scanner moves on, so the parser still sees a usable token stream.

const DURATION_UNITS: Record<string, number> = {
  s: 1,
  m: 60,
  h: 3600,
  d: 86_400,
  w: 604_800,
  months: 2_592_000,
  y: 31_536_000,
};

const DOT_DURATION_UNITS: Record<string, number> = { seconds: 1, minutes: 60, hours: 3600 };

const ONE_CHAR = new Set(['{', '}', '(', ')', '[', ']', ',', ';', ':', '.', '=', '<', '>', '+', '-', '*', '/', '%', '!', '?', '|', '&', '@']);

/** The operator starting at `i`, longest match first, as an interned literal (no slicing on the hot path). */
function punctAt(src: string, i: number, c: number): string | null {
  const d = src.charCodeAt(i + 1);
  switch (c) {
    case 123: return '{';
    case 125: return '}';
    case 40: return '(';
    case 41: return ')';
    case 91: return '[';
    case 93: return ']';
    case 44: return ',';
    case 59: return ';';
    case 46: return '.';
    case 63: return '?';
    case 64: return '@';
    case 58: return d === 58 ? '::' : ':';
    case 61: return d === 61 ? '==' : d === 62 ? '=>' : '=';
    case 33: return d === 61 ? '!=' : '!';
    case 60: return d === 61 ? '<=' : '<';
    case 62: return d === 61 ? '>=' : '>';
    case 38: return d === 38 ? '&&' : '&';
    case 124: return d === 124 ? '||' : '|';
    case 43: return d === 61 ? '+=' : '+';
    case 45: return d === 61 ? '-=' : d === 62 ? '->' : '-';
    case 42: return d === 61 ? '*=' : '*';
    case 47: return d === 61 ? '/=' : '/';
    case 37: return d === 61 ? '%=' : '%';
    default: return null;
  }
}

function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}
function isIdentPart(c: number): boolean {
  return isIdentStart(c) || (c >= 48 && c <= 57);
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isVaultPathChar(c: number): boolean {
  return isIdentPart(c) || c === 45 || c === 46 || c === 47;
}

/** Value of a number token's text (`1_000` is 1000). */
export function numberValue(raw: string): number {
  return Number(raw.includes('_') ? raw.replace(/_/g, '') : raw);
}

/**
 * Seconds of a duration token's text: `30s`, `6months`, `5.minutes`. A
 * duration the lexer reported as malformed (fractional, unknown unit) keeps
 * its bare number.
 */
export function durationSeconds(raw: string): number {
  let i = 0;
  while (i < raw.length && (isDigit(raw.charCodeAt(i)) || raw.charCodeAt(i) === 95)) i++;
  let isFloat = false;
  if (raw.charCodeAt(i) === 46 && isDigit(raw.charCodeAt(i + 1))) {
    isFloat = true;
    i++;
    while (i < raw.length && (isDigit(raw.charCodeAt(i)) || raw.charCodeAt(i) === 95)) i++;
  }
  const value = numberValue(raw.slice(0, i));
  if (!isFloat && raw.charCodeAt(i) === 46) return value * (DOT_DURATION_UNITS[raw.slice(i + 1)] as number);
  const unit = raw.slice(i);
  const factor = Object.prototype.hasOwnProperty.call(DURATION_UNITS, unit) ? DURATION_UNITS[unit] : undefined;
  return factor === undefined || isFloat ? value : value * factor;
}

// Token kinds as plain module constants: a property load on the TokenKind
// enum object at a site the optimiser has not seen run (the end-of-file push
// after the main loop) deoptimised the whole lexer on every call.
const IDENT: TokenKind = TokenKind.Ident;
const NUMBER: TokenKind = TokenKind.Number;
const DURATION: TokenKind = TokenKind.Duration;
const STRING: TokenKind = TokenKind.String;
const VAULT: TokenKind = TokenKind.Vault;
const PUNCT: TokenKind = TokenKind.Punct;
const EOF: TokenKind = TokenKind.Eof;

export interface LexResult {
  tokens: TokenStream;
  errors: SyntaxDiagnostic[];
}

export function lex(src: string, maxErrors: number): LexResult {
  const tokens = TokenStream.acquire((src.length >> 2) + 64);
  const errors: SyntaxDiagnostic[] = [];
  const n = src.length;
  let i = 0;
  let line = 1;
  let lineStart = 0;

  const report = (offset: number, l: number, ls: number, message: string): void => {
    if (errors.length < maxErrors) errors.push({ line: l, column: offset - ls + 1, message });
  };

  while (i < n) {
    const c = src.charCodeAt(i);
    // Whitespace and newlines.
    if (c === 10) {
      i++;
      line++;
      lineStart = i;
      tokens.newLine(i);
      continue;
    }
    if (c === 32 || c === 9 || c === 13 || c === 0xfeff) {
      i++;
      continue;
    }
    // Line comments: `//` and `#`.
    if (c === 35 || (c === 47 && src.charCodeAt(i + 1) === 47)) {
      const nl = src.indexOf('\n', i);
      i = nl < 0 ? n : nl;
      continue;
    }
    // Block comments do not exist; say so and skip the would-be comment so one slip is one error.
    if (c === 47 && src.charCodeAt(i + 1) === 42) {
      const close = src.indexOf('*/', i + 2);
      if (close < 0) {
        report(i, line, lineStart, 'unterminated `/*` comment at end of file; the DSL has no block comments, use `//` or `#` line comments');
        i = n;
      } else {
        report(i, line, lineStart, 'block comments `/* */` are not part of the DSL; use `//` or `#` line comments');
        for (let k = i; k < close; k++) {
          if (src.charCodeAt(k) === 10) {
            line++;
            lineStart = k + 1;
            tokens.newLine(lineStart);
          }
        }
        i = close + 2;
      }
      continue;
    }
    const start = i;
    const startLine = line;
    const startLs = lineStart;
    if (isIdentStart(c)) {
      let hash = c;
      i++;
      while (i < n) {
        const d = src.charCodeAt(i);
        if (!isIdentPart(d)) break;
        hash = (Math.imul(hash, 31) + d) | 0;
        i++;
      }
      const word = internedWord(src, start, i, hash);
      if (word === 'vault' && src.startsWith('://', i)) {
        let j = i + 3;
        while (j < n && isVaultPathChar(src.charCodeAt(j))) j++;
        const path = src.slice(i + 3, j);
        if (path.length === 0) report(start, line, lineStart, 'vault reference needs a path, as in `vault://team/service/key`');
        i = j;
        tokens.push(VAULT, path, start, i, line);
        continue;
      }
      tokens.push(IDENT, word, start, i, line);
      continue;
    }
    if (isDigit(c)) {
      i++;
      while (i < n) {
        const d = src.charCodeAt(i);
        if (isDigit(d) || d === 95) i++;
        else break;
      }
      let isFloat = false;
      if (src.charCodeAt(i) === 46 && isDigit(src.charCodeAt(i + 1))) {
        isFloat = true;
        i++;
        while (i < n) {
          const d = src.charCodeAt(i);
          if (isDigit(d) || d === 95) i++;
          else break;
        }
      }
      const numText = src.slice(start, i);
      // `5.minutes` style duration.
      if (!isFloat && src.charCodeAt(i) === 46 && isIdentStart(src.charCodeAt(i + 1))) {
        let j = i + 1;
        while (j < n && isIdentPart(src.charCodeAt(j))) j++;
        const unit = src.slice(i + 1, j);
        const factor = DOT_DURATION_UNITS[unit];
        if (factor !== undefined) {
          i = j;
          tokens.push(DURATION, src.slice(start, i), start, i, line);
          continue;
        }
      }
      // `30s` style duration: letters glued to the number.
      if (isIdentStart(src.charCodeAt(i))) {
        let j = i;
        while (j < n && isIdentPart(src.charCodeAt(j))) j++;
        const unit = src.slice(i, j);
        const factor = Object.prototype.hasOwnProperty.call(DURATION_UNITS, unit) ? DURATION_UNITS[unit] : undefined;
        i = j;
        if (factor === undefined || isFloat) {
          report(
            start,
            line,
            lineStart,
            isFloat
              ? `duration \`${shorten(src.slice(start, j))}\` must be a whole number followed by a unit`
              : `unknown duration unit \`${shorten(unit)}\` after \`${shorten(numText)}\`; allowed units: s, m, h, d, w, months, y, or \`.seconds\`, \`.minutes\`, \`.hours\``,
          );
        }
        tokens.push(DURATION, src.slice(start, j), start, i, line);
        continue;
      }
      if (numText.endsWith('_') || numText.includes('_.')) {
        report(start, line, lineStart, `number \`${shorten(numText)}\` cannot end a digit group with \`_\``);
      }
      tokens.push(NUMBER, numText, start, i, line);
      continue;
    }
    if (c === 34) {
      i++;
      let value = '';
      let chunk = i;
      let closed = false;
      while (i < n) {
        const d = src.charCodeAt(i);
        if (d === 34) {
          value += src.slice(chunk, i);
          i++;
          closed = true;
          break;
        }
        if (d === 10) {
          line++;
          lineStart = i + 1;
          tokens.newLine(lineStart);
          i++;
          continue;
        }
        if (d === 92) {
          value += src.slice(chunk, i);
          const e = src.charCodeAt(i + 1);
          let consumed = 2;
          switch (e) {
            case 110: value += '\n'; break;
            case 116: value += '\t'; break;
            case 114: value += '\r'; break;
            case 48: value += '\0'; break;
            case 92: value += '\\'; break;
            case 34: value += '"'; break;
            case 39: value += "'"; break;
            case 117: {
              // \u{hex}
              const close = src.charCodeAt(i + 2) === 123 ? src.indexOf('}', i + 3) : -1;
              const hex = close > 0 && close - (i + 3) <= 6 ? src.slice(i + 3, close) : '';
              const cp = /^[0-9a-fA-F]{1,6}$/.test(hex) ? parseInt(hex, 16) : -1;
              if (cp < 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                report(i, line, lineStart, 'invalid `\\u` escape; write `\\u{` then 1 to 6 hex digits of a Unicode scalar value then `}`');
              } else {
                value += String.fromCodePoint(cp);
                consumed = close - i + 1;
              }
              break;
            }
            default:
              if (Number.isNaN(e)) break;
              report(
                i,
                line,
                lineStart,
                `unknown escape \`\\${shorten(String.fromCharCode(e))}\` in string; allowed: \\n \\t \\r \\0 \\\\ \\" \\' \\u{…}`,
              );
              if (e === 10) {
                line++;
                lineStart = i + 2;
                tokens.newLine(lineStart);
              }
          }
          i += consumed;
          if (i > n) i = n;
          chunk = i;
          continue;
        }
        i++;
      }
      if (!closed) {
        report(start, startLine, startLs, 'unterminated string: no closing `"` before end of file');
        value += src.slice(chunk, n);
      }
      tokens.push(STRING, value, start, i, startLine);
      continue;
    }
    const op = punctAt(src, i, c);
    if (op !== null) {
      i += op.length;
      tokens.push(PUNCT, op, start, i, line);
      continue;
    }
    // Anything else: report once per run of unknown characters.
    const cp = src.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    report(i, line, lineStart, `unexpected character ${describeChar(cp)}; it cannot start any token of the DSL`);
    i += width;
    while (i < n && isStray(src.charCodeAt(i))) i++;
  }
  tokens.push(EOF, '', n, n, line);
  return { tokens, errors };
}

// Identifiers repeat a lot (keywords, field and variable names): a small
// direct-mapped table hands back the string already made for the same
// characters instead of slicing a new one each time.
const INTERN_SLOTS = 4096;
const INTERN_MAX_LENGTH = 32;
const internTable: string[] = new Array<string>(INTERN_SLOTS).fill('');

function internedWord(src: string, start: number, end: number, hash: number): string {
  const len = end - start;
  if (len > INTERN_MAX_LENGTH) return src.slice(start, end);
  const slot = (hash ^ (hash >>> 12)) & (INTERN_SLOTS - 1);
  const cached = internTable[slot]!;
  if (cached.length === len) {
    let k = 0;
    while (k < len && cached.charCodeAt(k) === src.charCodeAt(start + k)) k++;
    if (k === len) return cached;
  }
  const word = src.slice(start, end);
  internTable[slot] = word;
  return word;
}

function isStray(c: number): boolean {
  if (c === 10 || c === 32 || c === 9 || c === 13 || c === 34 || c === 35 || c === 47) return false;
  if (isIdentPart(c)) return false;
  return !ONE_CHAR.has(String.fromCharCode(c));
}

function describeChar(cp: number): string {
  if (cp < 32 || cp === 127 || (cp >= 0xd800 && cp <= 0xdfff)) return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  if (cp === 96) return '`` ` ``';
  return `\`${String.fromCodePoint(cp)}\` (U+${cp.toString(16).toUpperCase().padStart(4, '0')})`;
}

function shorten(text: string): string {
  const oneLine = text.replace(/[\r\n\t]/g, ' ');
  return oneLine.length > 40 ? oneLine.slice(0, 40) + '…' : oneLine;
}

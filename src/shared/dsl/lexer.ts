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
  // One digit is the most common number and needs no conversion call.
  if (raw.length === 1) {
    const digit = raw.charCodeAt(0) - 48;
    if (digit >= 0 && digit <= 9) return digit;
  }
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

// Character classes of ASCII code units, so the main loop dispatches on one
// table load instead of a chain of comparisons. Code units from 128 up are
// OTHER: they may appear only inside strings and comments.
const OTHER = 0;
const SPACE = 1; // space, tab, carriage return
const NEWLINE = 2;
const WORD = 3; // a-z A-Z _
const DIGIT = 4;
const QUOTE = 5;
const HASH = 6;
const SLASH = 7;
const PUNCT_CHAR = 8;
const CLASS = new Uint8Array(128);
CLASS[32] = SPACE;
CLASS[9] = SPACE;
CLASS[13] = SPACE;
CLASS[10] = NEWLINE;
for (let c = 0; c < 128; c++) {
  if (isIdentStart(c)) CLASS[c] = WORD;
  else if (isDigit(c)) CLASS[c] = DIGIT;
}
CLASS[34] = QUOTE;
CLASS[35] = HASH;
for (const ch of ONE_CHAR) CLASS[ch.charCodeAt(0)] = PUNCT_CHAR;
CLASS[47] = SLASH;

/** 1 for identifier characters (letters, digits, `_`), by code unit. */
const IDENT_PART = new Uint8Array(128);
for (let c = 0; c < 128; c++) IDENT_PART[c] = isIdentPart(c) ? 1 : 0;

/** One-character operators as interned literals, by code unit. */
const PUNCT1: string[] = new Array<string>(128).fill('');
for (const ch of ONE_CHAR) PUNCT1[ch.charCodeAt(0)] = ch;
/**
 * Operators made of a character and `=`, by the first character. Written as
 * literals so they are the engine's internalized strings: the parser's
 * comparisons with literals then come down to a pointer check.
 */
const PUNCT_EQ: string[] = new Array<string>(128).fill('');
for (const op of ['==', '!=', '<=', '>=', '+=', '-=', '*=', '/=', '%=']) PUNCT_EQ[op.charCodeAt(0)] = op;

// The source's UTF-16 code units, copied in bulk (Buffer.write) into one
// typed array kept between calls and grown when a longer source comes: the
// scanner reads an element of it in about half the time charCodeAt takes on
// a string. One unit past the end is 0, so a look-ahead at the last character
// reads a value no comparison accepts (as charCodeAt's NaN was).
let unitBuffer = Buffer.allocUnsafeSlow(8192);
let units = new Uint16Array(unitBuffer.buffer, unitBuffer.byteOffset, unitBuffer.length >> 1);
// Buffer.write stores UTF-16 little-endian; a big-endian host copies unit by unit instead.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function codeUnitsOf(src: string): Uint16Array {
  const n = src.length;
  if (n + 1 > units.length) {
    unitBuffer = Buffer.allocUnsafeSlow(Math.max((n + 1) * 2, unitBuffer.length * 2));
    units = new Uint16Array(unitBuffer.buffer, unitBuffer.byteOffset, unitBuffer.length >> 1);
  }
  if (LITTLE_ENDIAN) unitBuffer.write(src, 0, 'utf16le');
  else for (let k = 0; k < n; k++) units[k] = src.charCodeAt(k);
  units[n] = 0;
  return units;
}

/**
 * The scanner. The common tokens (names, plain strings, operators,
 * whitespace, comments) are handled in this loop with index arithmetic;
 * rarer shapes (numbers, strings with escapes or line breaks, block
 * comments, stray characters) go to helpers that return where to resume.
 */
export function lex(src: string, maxErrors: number): LexResult {
  const tokens = TokenStream.acquire((src.length >> 2) + 64);
  const errors: SyntaxDiagnostic[] = [];
  const n = src.length;
  const code = codeUnitsOf(src);
  let i = 0;
  let line = 1;
  let lineStart = 0;

  while (i < n) {
    const c = code[i]!;
    const cls = c < 128 ? CLASS[c]! : OTHER;
    if (cls === SPACE) {
      i++;
      continue;
    }
    if (cls === NEWLINE) {
      i++;
      line++;
      lineStart = i;
      tokens.newLine(i);
      // Indentation: a run of spaces in a tight loop rather than one dispatch each.
      while (i < n && code[i]! === 32) i++;
      continue;
    }
    if (cls === WORD) {
      // Name characters are ASCII (7 bits): the first twelve are packed four
      // to an int while scanning, so the name table below compares three ints
      // instead of the characters one by one.
      const start = i;
      let w0 = c;
      let w1 = 0;
      let w2 = 0;
      i++;
      while (i < n) {
        const d = code[i]!;
        if (d >= 128 || IDENT_PART[d] === 0) break;
        const k = i - start;
        if (k < 4) w0 = (w0 << 7) | d;
        else if (k < 8) w1 = (w1 << 7) | d;
        else if (k < 12) w2 = (w2 << 7) | d;
        i++;
      }
      // Identifiers repeat a lot (keywords, field and variable names): a
      // small direct-mapped table hands back the string already made for the
      // same characters instead of slicing a new one each time. Length and
      // packed characters together identify a name of up to twelve exactly.
      const len = i - start;
      let word: string;
      if (len <= NAME_MAX_LENGTH) {
        const slot = Math.imul(w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2 + len, 0x85ebca6b), 0x27d4eb2d) >>> NAME_SLOT_SHIFT;
        if (nameLength[slot] === len && nameKey0[slot] === w0 && nameKey1[slot] === w1 && nameKey2[slot] === w2) word = nameText[slot]!;
        else {
          word = src.slice(start, i);
          nameText[slot] = word;
          nameLength[slot] = len;
          nameKey0[slot] = w0;
          nameKey1[slot] = w1;
          nameKey2[slot] = w2;
        }
      } else {
        word = src.slice(start, i);
      }
      if (len === 5 && code[i]! === 58 && word === 'vault' && src.startsWith('://', i)) {
        i = vaultToken(src, start, i, line, lineStart, tokens, errors, maxErrors);
        continue;
      }
      tokens.push(IDENT, word, start, i, line);
      continue;
    }
    if (cls === PUNCT_CHAR || cls === SLASH) {
      const d = code[i + 1]!;
      if (cls === SLASH && (d === 47 || d === 42)) {
        if (d === 47) {
          // `//` line comment (a charCode loop: indexOf costs more on the short lines of comments).
          i += 2;
          while (i < n && code[i]! !== 10) i++;
        } else {
          i = blockComment(src, i, line, lineStart, tokens, errors, maxErrors);
          line = scanLine;
          lineStart = scanLineStart;
        }
        continue;
      }
      let op: string;
      if (d === 61 && PUNCT_EQ[c] !== '') op = PUNCT_EQ[c]!;
      else if (d === 62 && c === 61) op = '=>';
      else if (d === 62 && c === 45) op = '->';
      else if (d === c && c === 58) op = '::';
      else if (d === c && c === 38) op = '&&';
      else if (d === c && c === 124) op = '||';
      else op = PUNCT1[c]!;
      const start = i;
      i += op.length;
      tokens.push(PUNCT, op, start, i, line);
      continue;
    }
    if (cls === QUOTE) {
      // Fast path: a string without escapes or line breaks is one slice.
      const start = i;
      let j = i + 1;
      let d = 0;
      let hash = 0;
      while (j < n) {
        d = code[j]!;
        if (d === 34 || d === 92 || d === 10) break;
        hash = (Math.imul(hash, 31) + d) | 0;
        j++;
      }
      if (j < n && d === 34) {
        i = j + 1;
        tokens.push(STRING, internedSlice(src, code, start + 1, j, hash), start, i, line);
        continue;
      }
      i = stringToken(src, start, j, line, lineStart, tokens, errors, maxErrors);
      line = scanLine;
      lineStart = scanLineStart;
      continue;
    }
    if (cls === HASH) {
      i++;
      while (i < n && code[i]! !== 10) i++;
      continue;
    }
    if (cls === DIGIT) {
      i = numberToken(src, code, i, line, lineStart, tokens, errors, maxErrors);
      continue;
    }
    if (c === 0xfeff) {
      i++;
      continue;
    }
    i = strayCharacters(src, i, line, lineStart, errors, maxErrors);
  }
  tokens.push(EOF, '', n, n, line);
  return { tokens, errors };
}

function report(errors: SyntaxDiagnostic[], maxErrors: number, offset: number, l: number, ls: number, message: string): void {
  if (errors.length < maxErrors) errors.push({ line: l, column: offset - ls + 1, message });
}

// Line number and line start after a helper that can cross line breaks
// (block comments, strings); lex reads them back right after the call.
let scanLine = 1;
let scanLineStart = 0;

/** `vault://path` starting at `start`; `i` is just past the word `vault`. Returns where to resume. */
function vaultToken(src: string, start: number, i: number, line: number, lineStart: number, tokens: TokenStream, errors: SyntaxDiagnostic[], maxErrors: number): number {
  const n = src.length;
  let j = i + 3;
  while (j < n && isVaultPathChar(src.charCodeAt(j))) j++;
  const path = src.slice(i + 3, j);
  if (path.length === 0) report(errors, maxErrors, start, line, lineStart, 'vault reference needs a path, as in `vault://team/service/key`');
  tokens.push(VAULT, path, start, j, line);
  return j;
}

/** A would-be block comment at `i`: not part of the DSL, reported once and skipped. Returns where to resume. */
function blockComment(src: string, i: number, line: number, lineStart: number, tokens: TokenStream, errors: SyntaxDiagnostic[], maxErrors: number): number {
  const close = src.indexOf('*/', i + 2);
  if (close < 0) {
    report(errors, maxErrors, i, line, lineStart, 'unterminated `/*` comment at end of file; the DSL has no block comments, use `//` or `#` line comments');
    i = src.length;
  } else {
    report(errors, maxErrors, i, line, lineStart, 'block comments `/* */` are not part of the DSL; use `//` or `#` line comments');
    for (let k = i; k < close; k++) {
      if (src.charCodeAt(k) === 10) {
        line++;
        lineStart = k + 1;
        tokens.newLine(lineStart);
      }
    }
    i = close + 2;
  }
  scanLine = line;
  scanLineStart = lineStart;
  return i;
}

/**
 * A string with escapes, line breaks or no closing quote, opened at `start`;
 * `from` is the first character the fast path did not take. Returns where to
 * resume.
 */
function stringToken(
  src: string,
  start: number,
  from: number,
  line: number,
  lineStart: number,
  tokens: TokenStream,
  errors: SyntaxDiagnostic[],
  maxErrors: number,
): number {
  const n = src.length;
  const startLine = line;
  const startLs = lineStart;
  let i = from;
  let value = '';
  let chunk = start + 1;
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
            report(errors, maxErrors, i, line, lineStart, 'invalid `\\u` escape; write `\\u{` then 1 to 6 hex digits of a Unicode scalar value then `}`');
          } else {
            value += String.fromCodePoint(cp);
            consumed = close - i + 1;
          }
          break;
        }
        default:
          if (Number.isNaN(e)) break;
          report(
            errors,
            maxErrors,
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
    report(errors, maxErrors, start, startLine, startLs, 'unterminated string: no closing `"` before end of file');
    value += src.slice(chunk, n);
  }
  tokens.push(STRING, value, start, i, startLine);
  scanLine = line;
  scanLineStart = lineStart;
  return i;
}

/** Set by digitRunEnd when a run of digits held a `_` (digit groups). */
let digitRunHadUnderscore = false;

/** Where the run of digits and `_` starting at `i` ends. */
function digitRunEnd(code: Uint16Array, i: number, n: number): number {
  while (i < n) {
    const d = code[i]!;
    if (isDigit(d)) i++;
    else if (d === 95) {
      digitRunHadUnderscore = true;
      i++;
    } else break;
  }
  return i;
}

/** A number or duration token whose first digit is at `start`. Returns where to resume. */
function numberToken(src: string, code: Uint16Array, start: number, line: number, lineStart: number, tokens: TokenStream, errors: SyntaxDiagnostic[], maxErrors: number): number {
  const n = src.length;
  digitRunHadUnderscore = false;
  let i = digitRunEnd(code, start + 1, n);
  let isFloat = false;
  if (code[i]! === 46 && isDigit(code[i + 1]!)) {
    isFloat = true;
    i = digitRunEnd(code, i + 1, n);
  }
  // Digit-group checks below need string searches; most numbers have no `_` and skip them.
  const underscore = digitRunHadUnderscore;
  const numText = i - start === 1 ? DIGIT_TEXT[code[start]! - 48]! : internedSlice(src, code, start, i, textHash(code, start, i));
  // `5.minutes` style duration.
  if (!isFloat && src.charCodeAt(i) === 46 && isIdentStart(src.charCodeAt(i + 1))) {
    let j = i + 1;
    while (j < n && isIdentPart(src.charCodeAt(j))) j++;
    const factor = DOT_DURATION_UNITS[src.slice(i + 1, j)];
    if (factor !== undefined) {
      tokens.push(DURATION, src.slice(start, j), start, j, line);
      return j;
    }
  }
  // `30s` style duration: letters glued to the number.
  if (isIdentStart(src.charCodeAt(i))) {
    let j = i;
    while (j < n && isIdentPart(src.charCodeAt(j))) j++;
    const unit = src.slice(i, j);
    const factor = Object.prototype.hasOwnProperty.call(DURATION_UNITS, unit) ? DURATION_UNITS[unit] : undefined;
    if (factor === undefined || isFloat) {
      report(
        errors,
        maxErrors,
        start,
        line,
        lineStart,
        isFloat
          ? `duration \`${shorten(src.slice(start, j))}\` must be a whole number followed by a unit`
          : `unknown duration unit \`${shorten(unit)}\` after \`${shorten(numText)}\`; allowed units: s, m, h, d, w, months, y, or \`.seconds\`, \`.minutes\`, \`.hours\``,
      );
    }
    tokens.push(DURATION, src.slice(start, j), start, j, line);
    return j;
  }
  if (underscore && (numText.endsWith('_') || numText.includes('_.'))) {
    report(errors, maxErrors, start, line, lineStart, `number \`${shorten(numText)}\` cannot end a digit group with \`_\``);
  }
  tokens.push(NUMBER, numText, start, i, line);
  return i;
}

/** A character no token starts with: one diagnostic for the run of them. Returns where to resume. */
function strayCharacters(src: string, i: number, line: number, lineStart: number, errors: SyntaxDiagnostic[], maxErrors: number): number {
  const n = src.length;
  const cp = src.codePointAt(i)!;
  const width = cp > 0xffff ? 2 : 1;
  report(errors, maxErrors, i, line, lineStart, `unexpected character ${describeChar(cp)}; it cannot start any token of the DSL`);
  i += width;
  while (i < n && isStray(src.charCodeAt(i))) i++;
  return i;
}

// The name table: texts by slot, their lengths (0: unused) and their
// characters packed seven bits each, four to an int. At most twelve
// characters, like INTERN_MAX_LENGTH below and for the same reason.
const NAME_SLOT_BITS = 12;
const NAME_SLOT_SHIFT = 32 - NAME_SLOT_BITS;
const NAME_MAX_LENGTH = 12;
const nameText: string[] = new Array<string>(1 << NAME_SLOT_BITS).fill('');
const nameLength = new Uint8Array(1 << NAME_SLOT_BITS);
const nameKey0 = new Int32Array(1 << NAME_SLOT_BITS);
const nameKey1 = new Int32Array(1 << NAME_SLOT_BITS);
const nameKey2 = new Int32Array(1 << NAME_SLOT_BITS);

// Short strings and numbers repeat a lot (capability strings, field names,
// small constants): a direct-mapped table hands back the
// string already made for the same characters instead of slicing a new one.
// Fewer fresh strings also means fewer young objects the token stream keeps
// alive for the collector to copy.
const INTERN_SLOTS = 4096;
// V8 copies slices shorter than 13 characters and makes longer ones views
// into the source; keeping such a view in the table would keep a whole
// earlier source (up to 1 MiB each) alive, so longer texts are not kept.
const INTERN_MAX_LENGTH = 12;
const internTable: string[] = new Array<string>(INTERN_SLOTS).fill('');
// The characters of each slot's text, compared as numbers: reading them from
// a typed array costs less than charCodeAt on a string of unknown shape.
const internChars = new Uint16Array(INTERN_SLOTS * INTERN_MAX_LENGTH);
// Length of each slot's text (an unused slot holds '', length 0).
const internLength = new Uint8Array(INTERN_SLOTS);

/** `src.slice(start, end)`, from the intern table when possible; `hash` is textHash of those characters. */
function internedSlice(src: string, code: Uint16Array, start: number, end: number, hash: number): string {
  const len = end - start;
  if (len > INTERN_MAX_LENGTH) return src.slice(start, end);
  const slot = (hash ^ (hash >>> 12)) & (INTERN_SLOTS - 1);
  if (internLength[slot] === len) {
    const base = slot * INTERN_MAX_LENGTH;
    let k = 0;
    while (k < len && internChars[base + k] === code[start + k]) k++;
    if (k === len) return internTable[slot]!;
  }
  return internNew(src, code, start, end, slot);
}

/** Slices a text the table does not hold and stores it in `slot`. */
function internNew(src: string, code: Uint16Array, start: number, end: number, slot: number): string {
  const text = src.slice(start, end);
  internTable[slot] = text;
  internLength[slot] = end - start;
  const base = slot * INTERN_MAX_LENGTH;
  for (let k = start; k < end; k++) internChars[base + k - start] = code[k]!;
  return text;
}

/** The hash the intern table uses (the same fold lex computes while scanning a name or string). */
function textHash(code: Uint16Array, start: number, end: number): number {
  let hash = 0;
  for (let k = start; k < end; k++) hash = (Math.imul(hash, 31) + code[k]!) | 0;
  return hash;
}

const DIGIT_TEXT = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

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

import type { Token, TokenKind } from './tokens.js';

// Splits DSL text into tokens. The patterns are the token rules at the end of
// Symbiont's grammar.js (identifier, string, duration_literal, number,
// vault_url, comment), written as sticky regular expressions. Like
// tree-sitter, the lexer takes the longest match: `30s` is a duration,
// `1_000s` a number followed by the word `s`. White space and comments (`//`
// or `#` to the end of the line) separate tokens.

/** grammar.js's `/\s+/` as tree-sitter reads it: ASCII white space only (a no-break space is an error). */
const SPACE = /[ \t\n\r\v\f]+/y;
/** Unicode white space that JavaScript's `\s` would accept, named in the error. */
const OTHER_SPACE = /^\s$/;
const COMMENT = /(?:\/\/|#)[^\n]*/y;
const WORD = /[a-zA-Z_][a-zA-Z0-9_]*/y;
/** `"(\\.|[^"\\])*"`: a backslash escapes any character but a line break. */
const STRING = /"(?:\\[^\n]|[^"\\])*"/y;
const STRING_PREFIX = /"(?:\\[^\n]|[^"\\])*/y;
const DURATION = /\d+(?:\.seconds|\.minutes|\.hours|months|s|m|h|d|w|y)/y;
const NUMBER = /\d+(?:_\d+)*(?:\.\d+)?/y;
const VAULT = /vault:\/\/[A-Za-z0-9_\-/.]+/y;
/** Operators and separators, longest first so that `==` is not read as `=` `=`. */
const PUNCTUATION = /=>|->|==|!=|<=|>=|&&|\|\||[-+*/%]=|[{}()[\],:;=<>+\-*/%!.]/y;

function isAsciiSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isWordStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

/** Whether the character at `pos` can start no token (nor white space or a comment). */
function startsNoToken(src: string, pos: number): boolean {
  const c = src[pos]!;
  if (isAsciiSpace(c) || isDigit(c) || isWordStart(c) || c === '"' || c === '#') return false;
  return matchAt(PUNCTUATION, src, pos) === null;
}

/** The text of `pattern` at `pos`, or null. */
function matchAt(pattern: RegExp, src: string, pos: number): string | null {
  pattern.lastIndex = pos;
  return pattern.exec(src)?.[0] ?? null;
}

export function lex(src: string): Token[] {
  const tokens: Token[] = [];
  // Like tree-sitter's lexer, skip a byte order mark at the very start (and only there).
  let pos = src.startsWith('\uFEFF') ? 1 : 0;
  let line = 1;
  let lineStart = pos;

  /** Moves past `text`, keeping count of the lines it spans. */
  const advance = (text: string): void => {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
      line++;
      lineStart = pos + i + 1;
    }
    pos += text.length;
  };
  const push = (kind: TokenKind, text: string, message?: string): void => {
    tokens.push({ kind, text: message ?? text, start: pos, end: pos + text.length, line, column: pos - lineStart + 1 });
    advance(text);
  };
  /**
   * Characters that start no token, as one token: a run of them is one
   * mistake, and one token per character would make a megabyte of them a
   * million tokens. The message names the first character.
   */
  const pushInvalidRun = (): void => {
    const first = String.fromCodePoint(src.codePointAt(pos)!);
    let end = pos + first.length;
    while (end < src.length && startsNoToken(src, end)) end += String.fromCodePoint(src.codePointAt(end)!).length;
    const code = first.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    const message = OTHER_SPACE.test(first)
      ? `unexpected character U+${code}, a space that is not ASCII; separate tokens with ASCII spaces, tabs or line breaks`
      : `unexpected character ${JSON.stringify(first)}; names are ASCII letters, digits and \`_\``;
    push('invalid', src.slice(pos, end), message);
  };

  while (pos < src.length) {
    const c = src[pos]!;
    if (isAsciiSpace(c)) {
      advance(matchAt(SPACE, src, pos)!);
    } else if (c === '#' || src.startsWith('//', pos)) {
      advance(matchAt(COMMENT, src, pos)!);
    } else if (c === '"') {
      const text = matchAt(STRING, src, pos);
      if (text !== null) push('string', text);
      else {
        const prefix = matchAt(STRING_PREFIX, src, pos)!;
        const atEnd = pos + prefix.length >= src.length;
        push(
          'invalid',
          prefix,
          atEnd
            ? 'unterminated string: no closing `"` before end of file'
            : 'a `\\` at the end of a line inside a string; a backslash escapes the character after it on the same line',
        );
      }
    } else if (isDigit(c)) {
      // Longest match: `30s` is a duration, `1_000s` and `1.5s` are numbers followed by `s`.
      const duration = matchAt(DURATION, src, pos);
      const number = matchAt(NUMBER, src, pos)!;
      if (duration !== null && duration.length > number.length) push('duration', duration);
      else push('number', number);
    } else if (src.startsWith('/*', pos)) {
      push('invalid', '/*', 'block comments (`/* */`) are not part of the language; start each comment line with `//` or `#`');
    } else if (isWordStart(c)) {
      const vault = c === 'v' ? matchAt(VAULT, src, pos) : null;
      if (vault !== null) push('vault', vault);
      else push('word', matchAt(WORD, src, pos)!);
    } else {
      const punct = matchAt(PUNCTUATION, src, pos);
      if (punct !== null) push('punct', punct);
      else pushInvalidRun();
    }
  }
  tokens.push({ kind: 'eof', text: '', start: src.length, end: src.length, line, column: src.length - lineStart + 1 });
  return tokens;
}

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

/** Token kinds by their number in a TokenList. */
const KINDS: readonly TokenKind[] = ['word', 'string', 'number', 'duration', 'vault', 'punct', 'invalid', 'eof'];
const KIND_NUMBER = new Map(KINDS.map((kind, i) => [kind, i]));

/**
 * The tokens of one text, their fields in typed arrays and their text read from the source when
 * asked. A megabyte of text can be a million tokens: as a million objects, each with its own
 * string, they were most of what the parser keeps alive, and the garbage collector walked them
 * again and again while the syntax tree grew (most of all under `--optimize-for-size`, which the
 * server sets: docs/benchmarks.md, "Hostile DSL text"). Here they are flat arrays it never walks.
 */
export class TokenList {
  /** How many tokens, the final `eof` included. */
  length = 0;
  private readonly kinds: Uint8Array;
  private readonly starts: Int32Array;
  private readonly ends: Int32Array;
  private readonly lines: Int32Array;
  private readonly columns: Int32Array;
  /** The message of each `invalid` token, by index: its `text`. */
  private readonly messages = new Map<number, string>();

  constructor(private readonly src: string) {
    // Every token but `eof` spans at least one character.
    const capacity = src.length + 1;
    this.kinds = new Uint8Array(capacity);
    this.starts = new Int32Array(capacity);
    this.ends = new Int32Array(capacity);
    this.lines = new Int32Array(capacity);
    this.columns = new Int32Array(capacity);
  }

  push(kind: TokenKind, start: number, end: number, line: number, column: number, message?: string): void {
    const i = this.length++;
    this.kinds[i] = KIND_NUMBER.get(kind)!;
    this.starts[i] = start;
    this.ends[i] = end;
    this.lines[i] = line;
    this.columns[i] = column;
    if (message !== undefined) this.messages.set(i, message);
  }

  kindAt(i: number): TokenKind {
    return KINDS[this.kinds[i]!]!;
  }

  /** The source text of token `i` (for `invalid`, its message). */
  textAt(i: number): string {
    return this.messages.get(i) ?? this.src.slice(this.starts[i], this.ends[i]);
  }

  endAt(i: number): number {
    return this.ends[i]!;
  }

  /** Token `i` as an object, made on each call. */
  at(i: number): Token {
    return { kind: this.kindAt(i), text: this.textAt(i), start: this.starts[i]!, end: this.ends[i]!, line: this.lines[i]!, column: this.columns[i]! };
  }
}

export function lex(src: string): TokenList {
  const tokens = new TokenList(src);
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
    tokens.push(kind, pos, pos + text.length, line, pos - lineStart + 1, message);
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
  tokens.push('eof', src.length, src.length, line, src.length - lineStart + 1);
  return tokens;
}

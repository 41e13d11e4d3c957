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
const OTHER_SPACE = /\s/y;
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

  while (pos < src.length) {
    const skipped = matchAt(SPACE, src, pos) ?? matchAt(COMMENT, src, pos);
    if (skipped !== null) {
      advance(skipped);
      continue;
    }
    const c = src[pos]!;
    if (c === '"') {
      const text = matchAt(STRING, src, pos);
      if (text !== null) push('string', text);
      else {
        const prefix = matchAt(STRING_PREFIX, src, pos)!;
        const atEnd = pos + prefix.length >= src.length;
        push('invalid', prefix, atEnd ? 'unterminated string: no closing `"` before end of file' : 'a `\\` at the end of a line inside a string; a backslash escapes the character after it on the same line');
      }
    } else if (c >= '0' && c <= '9') {
      // Longest match: `30s` is a duration, `1_000s` and `1.5s` are numbers followed by `s`.
      const duration = matchAt(DURATION, src, pos);
      const number = matchAt(NUMBER, src, pos)!;
      if (duration !== null && duration.length > number.length) push('duration', duration);
      else push('number', number);
    } else if (src.startsWith('/*', pos)) {
      push('invalid', '/*', 'block comments (`/* */`) are not part of the language; start each comment line with `//` or `#`');
    } else {
      const vault = matchAt(VAULT, src, pos);
      const word = vault === null ? matchAt(WORD, src, pos) : null;
      const punct = vault === null && word === null ? matchAt(PUNCTUATION, src, pos) : null;
      if (vault !== null) push('vault', vault);
      else if (word !== null) push('word', word);
      else if (punct !== null) push('punct', punct);
      else if (matchAt(OTHER_SPACE, src, pos) !== null) {
        const code = src.charCodeAt(pos).toString(16).toUpperCase().padStart(4, '0');
        push('invalid', src[pos]!, `unexpected character U+${code}, a space that is not ASCII; separate tokens with ASCII spaces, tabs or line breaks`);
      } else {
        const char = String.fromCodePoint(src.codePointAt(pos)!);
        push('invalid', char, `unexpected character ${JSON.stringify(char)}; names are ASCII letters, digits and \`_\``);
      }
    }
  }
  tokens.push({ kind: 'eof', text: '', start: src.length, end: src.length, line, column: src.length - lineStart + 1 });
  return tokens;
}

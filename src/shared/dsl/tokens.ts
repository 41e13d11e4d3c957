import { shownName } from './shown-name.js';

// Tokens of the Symbiont DSL, as the parser reads them (the lexer keeps them in
// typed arrays, lexer.ts's TokenList, and makes one of these on demand), and the
// diagnostic shape both report.

export type TokenKind =
  /** `[a-zA-Z_][a-zA-Z0-9_]*`; keywords are words too, told apart by the parser (they are contextual). */
  | 'word'
  | 'string'
  | 'number'
  | 'duration'
  /** `vault://path`. */
  | 'vault'
  /** Brackets, separators and operators. */
  | 'punct'
  /** Text the lexer could not read; `text` holds the error message. */
  | 'invalid'
  | 'eof';

export interface Token {
  kind: TokenKind;
  /** The source text of the token (for `invalid`, the message). */
  text: string;
  /** UTF-16 offset of the first character. */
  start: number;
  /** UTF-16 offset just past the last character. */
  end: number;
  line: number;
  column: number;
}

export interface SyntaxDiagnostic {
  line: number;
  column: number;
  message: string;
}

/** Tokens are quoted shorter than names: a message may show two of them. */
const TOKEN_SHOWN_CHARS = 40;

/** Shows a token the way an error message quotes it. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case 'eof':
      return 'end of file';
    case 'string':
      return 'a string';
    case 'number':
      return `number \`${shownName(token.text, TOKEN_SHOWN_CHARS)}\``;
    case 'duration':
      return `duration \`${shownName(token.text, TOKEN_SHOWN_CHARS)}\``;
    case 'vault':
      return 'a vault reference';
    default:
      return `\`${shownName(token.text, TOKEN_SHOWN_CHARS)}\``;
  }
}

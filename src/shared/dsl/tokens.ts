// Token kinds and the diagnostic shape shared by the DSL lexer and parser.

export enum TokenKind {
  Ident = 1,
  Number = 2,
  Duration = 3,
  String = 4,
  Vault = 5,
  Punct = 6,
  Eof = 7,
}

export interface Token {
  kind: TokenKind;
  /** Identifier name, operator text, decoded string value, vault path or duration/number source text. */
  text: string;
  /** Numeric value: the number, or a duration in seconds. */
  value: number;
  start: number;
  end: number;
  line: number;
  column: number;
}

export interface SyntaxDiagnostic {
  line: number;
  column: number;
  message: string;
}

/** Shows a token the way an error message quotes it. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case TokenKind.Eof:
      return 'end of file';
    case TokenKind.String:
      return 'a string';
    case TokenKind.Number:
      return `number \`${token.text}\``;
    case TokenKind.Duration:
      return `duration \`${token.text}\``;
    case TokenKind.Vault:
      return 'a vault reference';
    default:
      return `\`${token.text.length > 40 ? token.text.slice(0, 40) + '…' : token.text}\``;
  }
}

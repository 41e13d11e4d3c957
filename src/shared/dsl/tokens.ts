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

/**
 * Tokens stored column-wise in typed arrays: a 1 MiB input can hold a million
 * tokens, and one object per token would spend most of the parse in the
 * garbage collector. `get` builds a Token object only where one is needed.
 * Columns are not stored: the lexer records where each line starts, and a
 * token's column is its offset minus the start of its line. Numeric values
 * are computed from the source text by the parser, which needs few of them.
 *
 * Allocating typed arrays is costly next to lexing a small file, so one
 * stream is kept between parses (parsing is synchronous) and reused through
 * `acquire`/`release`; a stream that grew past RETAINED_CAPACITY is dropped
 * instead, so an unusual parse does not pin its arrays in memory.
 */
export class TokenStream {
  count = 0;
  kind: Uint8Array;
  start: Int32Array;
  end: Int32Array;
  line: Int32Array;
  text: string[];
  /** Offset where each line starts: lineStarts[0] = 0, lineStarts[k] = start of line k + 1. */
  lineStarts: Int32Array;
  lineCount = 1;
  // The parser often looks at the same token twice; keep the last one built.
  private cachedIndex = -1;
  private cached: Token | null = null;
  private scratchTable: Int32Array | null = null;

  constructor(capacity: number) {
    const n = Math.max(16, capacity);
    this.kind = new Uint8Array(n);
    this.start = new Int32Array(n);
    this.end = new Int32Array(n);
    this.line = new Int32Array(n);
    this.text = [];
    this.lineStarts = new Int32Array(Math.max(16, n >> 2));
  }

  /** An empty stream able to hold about `capacity` tokens without growing (it grows if needed). */
  static acquire(capacity: number): TokenStream {
    const pooled = pool;
    if (pooled !== null) {
      pool = null;
      return pooled;
    }
    return new TokenStream(Math.min(capacity, MAX_INITIAL_CAPACITY));
  }

  /** Hands the stream back for reuse; the caller must not touch it afterwards. */
  release(): void {
    if (this.kind.length > RETAINED_CAPACITY || this.lineStarts.length > RETAINED_CAPACITY) return;
    // Drop references to this parse's strings so they can be collected (a
    // plain loop: for the few hundred tokens of a typical file it costs less
    // than the call into Array.prototype.fill).
    const text = this.text;
    for (let i = 0; i < this.count; i++) text[i] = '';
    this.count = 0;
    this.lineCount = 1;
    this.cachedIndex = -1;
    this.cached = null;
    pool = this;
  }

  push(kind: TokenKind, text: string, start: number, end: number, line: number): void {
    if (this.count === this.kind.length) this.grow();
    const i = this.count++;
    this.kind[i] = kind;
    // Overwrites a reused slot or appends (never leaves a hole).
    this.text[i] = text;
    this.start[i] = start;
    this.end[i] = end;
    this.line[i] = line;
  }

  /** Records that a new line starts at `offset` (offsets arrive in increasing order). */
  newLine(offset: number): void {
    if (this.lineCount === this.lineStarts.length) this.lineStarts = grownInt32(this.lineStarts, this.lineCount * 2);
    this.lineStarts[this.lineCount++] = offset;
  }

  /** 1-based column of token `i`. */
  column(i: number): number {
    return this.start[i]! - this.lineStarts[this.line[i]! - 1]! + 1;
  }

  /**
   * An Int32Array of at least `n` entries (contents unspecified) for the
   * parser's per-token tables. Small ones are kept with the stream and reused
   * by later parses (a stream serves one parse at a time); large ones are not kept.
   */
  scratch(n: number): Int32Array {
    if (n > SCRATCH_RETAINED_CAPACITY) return new Int32Array(n);
    if (this.scratchTable === null || this.scratchTable.length < n) this.scratchTable = new Int32Array(Math.max(n, 1024));
    return this.scratchTable;
  }

  get(i: number): Token {
    if (i === this.cachedIndex) return this.cached!;
    const t: Token = {
      kind: this.kind[i] as TokenKind,
      text: this.text[i]!,
      start: this.start[i]!,
      end: this.end[i]!,
      line: this.line[i]!,
      column: this.column(i),
    };
    this.cachedIndex = i;
    this.cached = t;
    return t;
  }

  private grow(): void {
    const n = this.kind.length * 2;
    const kind = new Uint8Array(n);
    kind.set(this.kind);
    this.kind = kind;
    this.start = grownInt32(this.start, n);
    this.end = grownInt32(this.end, n);
    this.line = grownInt32(this.line, n);
  }
}

// Up to this many tokens (about 7 MB of typed arrays plus the text slots,
// enough for a typical 1 MiB file) the stream is kept for the next parse;
// reallocating it every time keeps the collector marking and costs more than
// the lexing itself.
const RETAINED_CAPACITY = 1 << 19;
// Per-token scratch tables up to this many entries stay with a pooled stream.
const SCRATCH_RETAINED_CAPACITY = 1 << 15;
// A first guess never allocates for more tokens than this; the stream doubles when it must.
const MAX_INITIAL_CAPACITY = 1 << 18;
let pool: TokenStream | null = new TokenStream(4096);

function grownInt32(a: Int32Array, n: number): Int32Array {
  const next = new Int32Array(n);
  next.set(a);
  return next;
}

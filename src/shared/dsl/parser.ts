import { DSL_MAX_ERRORS, DSL_MAX_NESTING } from '../limits.js';
import type {
  AgentDecl,
  AgentMember,
  Block,
  DslFile,
  Expr,
  FunctionDecl,
  Item,
  MatchArm,
  Pair,
  PairBlock,
  Param,
  Pattern,
  PolicyDecl,
  PolicyRule,
  Pos,
  Stmt,
  TypeRef,
  WithAttribute,
  WithBlock,
} from './ast.js';
import { durationSeconds, lex, numberValue } from './lexer.js';
import { describeToken, TokenKind, TokenStream, type SyntaxDiagnostic, type Token } from './tokens.js';

// Recursive-descent parser. Recursion is bounded by an explicit nesting
// counter (DSL_MAX_NESTING), so hostile input ends in a diagnostic rather than
// a stack overflow. A syntax error is handed back by return value, not thrown
// (V8 captures a stack trace for every throw, microseconds each): `fail`
// records it in `fault` and returns FAILED, every caller returns at once when
// `fault` is set, and the nearest statement, rule, key/value pair, agent
// member or item boundary records it, skips to a sensible restart point and
// carries on. Only nesting past the bound and an exhausted error budget still
// throw (once per parse), to unwind to the top level.

// Token kinds as module constants: an imported enum is read through its
// module binding and checked for its shape at every use, and the parser
// tests kinds on every token. The lexer keeps the same copy: constants
// imported from tokens.ts instead measured 13-22% slower on a 1 MiB parse.
const IDENT: TokenKind = TokenKind.Ident;
const NUMBER: TokenKind = TokenKind.Number;
const DURATION: TokenKind = TokenKind.Duration;
const STRING: TokenKind = TokenKind.String;
const VAULT: TokenKind = TokenKind.Vault;
const PUNCT: TokenKind = TokenKind.Punct;
const EOF: TokenKind = TokenKind.Eof;

export interface ParseResult {
  file: DslFile;
  errors: SyntaxDiagnostic[];
}

/** Nesting past the bound: thrown to unwind to the top level instead of recovering locally (never escapes `parseDsl`). */
class NestingFault {
  constructor(readonly diag: SyntaxDiagnostic) {}
}
/** Error budget exhausted: stop parsing. */
class StopFault {}

const TOP_LEVEL = new Set(['metadata', 'agent', 'policy', 'type', 'function', 'schedule', 'channel', 'memory', 'webhook']);
const AGENT_MEMBERS = new Set(['capabilities', 'policy', 'function', 'with']);

export interface ParseOptions {
  /**
   * Keep the statements of blocks (function, `with`, `if`, lambda bodies).
   * The report needs only how many a block holds; not keeping them lets a
   * large file's statement trees die young instead of being carried by the
   * garbage collector through the whole parse. Syntax errors are the same
   * either way. Default true.
   */
  retainBodies?: boolean;
  /**
   * Receives each top-level item as soon as it is parsed, instead of the
   * items being collected into `file.items` (which then stays empty). A
   * caller that only summarises items lets each item's tree die young.
   */
  itemSink?: ItemSink;
  /**
   * Build policy rule conditions as syntax trees. When false, a condition is
   * parsed (its syntax errors are the same) but not built: `condition` is a
   * `group` node around a placeholder that keeps only the condition's
   * position and source range, for callers that only quote its text.
   * Default true.
   */
  conditionTrees?: boolean;
}

export interface ItemSink {
  add(item: Item): void;
}

/**
 * What a parse method returns after recording a syntax error in `fault`,
 * typed to fit any result; callers check `fault` before using a result.
 */
const FAILED = Object.freeze({}) as never;

// The arguments of every type written without `<...>` (most of them); frozen so no caller can fill it.
const NO_TYPE_ARGS = Object.freeze([]) as unknown as TypeRef[];

/**
 * Placeholders for expression nodes inside blocks whose statements are not
 * retained, by the kinds parseStatement tells apart; `other` serves the rest.
 */
const SKIPPED = {
  ident: Object.freeze({ kind: 'ident' }) as Expr,
  member: Object.freeze({ kind: 'member' }) as Expr,
  index: Object.freeze({ kind: 'index' }) as Expr,
  if: Object.freeze({ kind: 'if' }) as Expr,
  match: Object.freeze({ kind: 'match' }) as Expr,
  other: Object.freeze({ kind: 'string' }) as Expr,
};

// Lists never filled while discarding (see SKIPPED).
const NO_ARGS = Object.freeze([]) as unknown as { name: string | null; value: Expr }[];
const NO_ITEMS = Object.freeze([]) as unknown as Expr[];

// Returned for each statement of a block whose statements are not retained: it is only counted.
const DISCARDED = Object.freeze({}) as Stmt;

// Shared by every block whose statements were not retained; frozen so no caller can fill it.
const NO_STATEMENTS = Object.freeze([]) as unknown as Stmt[];

// Block and pattern placeholders inside discarded blocks (see SKIPPED).
const SKIPPED_BLOCK = Object.freeze({ kind: 'block', statements: NO_STATEMENTS, tail: null, count: 0 }) as Block;
const SKIPPED_PATTERN = Object.freeze({ kind: 'binding' }) as Pattern;

export function parseDsl(src: string, options?: ParseOptions): ParseResult {
  const parser = new Parser(src, options?.retainBodies !== false, options?.itemSink ?? null, options?.conditionTrees !== false);
  try {
    return parser.parseFile();
  } finally {
    parser.release();
  }
}

class Parser {
  private readonly ts: TokenStream;
  private readonly kinds: Uint8Array;
  private readonly texts: string[];
  private readonly last: number;
  private readonly errors: SyntaxDiagnostic[];
  /** Index of the matching bracket token for every bracket, -1 when unmatched; built on first recovery. */
  private matchTable: Int32Array | null = null;
  private pos = 0;
  private depth = 0;
  private noRecord = false;
  /**
   * Inside a block whose statements are not retained: expression nodes are
   * never looked at beyond their kind (assignment targets, `if`/`match`
   * statements), so shared placeholders stand in for them (see SKIPPED).
   */
  private discarding = false;
  private stopped = false;
  /** Set by parseStatement when it finds a block's trailing expression. */
  private tail: Expr | null = null;
  /**
   * The syntax error on its way back to the nearest recovery point (see the
   * comment at the top); the first one set stands, as a throw would.
   */
  private fault: SyntaxDiagnostic | null = null;

  constructor(
    private readonly src: string,
    private readonly retainBodies: boolean,
    private readonly sink: ItemSink | null,
    private readonly conditionTrees: boolean,
  ) {
    const lexed = lex(src, DSL_MAX_ERRORS);
    this.ts = lexed.tokens;
    this.kinds = this.ts.kind;
    this.texts = this.ts.text;
    this.errors = lexed.errors;
    this.last = this.ts.count - 1;
  }

  release(): void {
    this.ts.release();
  }

  /**
   * A syntax list as the tree keeps it: trimmed when the items are collected
   * (they live until the parse ends), as built when each item goes to a sink
   * and its tree dies young (a copy would be pure cost).
   */
  private fit<T>(a: T[]): T[] {
    return this.sink === null ? trimmed(a) : a;
  }

  /** Clean files never need bracket pairs, so they are computed only when recovery first skips. */
  private get match(): Int32Array {
    return (this.matchTable ??= matchBrackets(this.ts));
  }

  parseFile(): ParseResult {
    const items: Item[] = [];
    if (this.errors.length >= DSL_MAX_ERRORS) this.stopped = true;
    while (!this.stopped && this.kinds[this.pos] !== EOF) {
      const itemStart = this.pos;
      let item: Item | null = null;
      try {
        item = this.parseItem();
      } catch (e) {
        if (!this.absorb(e)) break;
        this.depth = 0;
        this.noRecord = false;
        this.discarding = false;
        this.skipToTopLevel(itemStart);
      }
      const fault = this.fault;
      if (fault !== null) {
        this.fault = null;
        item = null;
        this.record(fault, false);
        if (this.stopped) break;
        this.depth = 0;
        this.noRecord = false;
        this.discarding = false;
        this.skipToTopLevel(itemStart);
      }
      if (item !== null) {
        if (this.sink !== null) this.sink.add(item);
        else items.push(item);
      }
    }
    if (this.errors.length > 1) this.errors.sort(byPosition);
    if (this.stopped) {
      // Placed at the last reported error: that is where reading stopped.
      const lastError = this.errors[this.errors.length - 1]!;
      this.errors.push({ line: lastError.line, column: lastError.column, message: `too many syntax errors; stopped after ${DSL_MAX_ERRORS}` });
    }
    return { file: { items }, errors: this.errors };
  }

  // ---- error plumbing -------------------------------------------------

  /** Records a caught fault; returns false when parsing must stop. */
  private absorb(e: unknown): boolean {
    if (e instanceof StopFault) return false;
    if (e instanceof NestingFault) {
      this.record(e.diag, false);
      return !this.stopped;
    }
    if (e instanceof RangeError) {
      // Last-resort guard: the nesting counter should make this unreachable.
      const t = this.peek();
      this.record({ line: t.line, column: t.column, message: 'input nests too deeply to parse' }, false);
      return !this.stopped;
    }
    throw e;
  }

  private record(diag: SyntaxDiagnostic, throwOnStop = true): void {
    const prev = this.errors[this.errors.length - 1];
    if (prev && prev.line === diag.line && prev.column === diag.column) return;
    this.errors.push(diag);
    if (this.errors.length >= DSL_MAX_ERRORS) {
      this.stopped = true;
      if (throwOnStop) throw new StopFault();
    }
  }

  /** Records a syntax error at `t` for the nearest recovery point; the caller returns the result at once. */
  private fail(message: string, t: Token = this.peek()): never {
    this.defer(message, t);
    return FAILED;
  }

  /** Like fail, for methods whose callers test for null. */
  private defer(message: string, t: Token = this.peek()): null {
    if (this.fault === null) this.fault = { line: t.line, column: t.column, message };
    return null;
  }

  /** Fails with "expected `s` why, found ..." at the current token. */
  private expected(s: string, why: string): never {
    return this.fail(`expected \`${s}\` ${why}, found ${describeToken(this.peek())}`);
  }

  private softError(message: string, t: Token = this.peek()): void {
    this.record({ line: t.line, column: t.column, message });
  }

  private enter(): void {
    if (++this.depth > DSL_MAX_NESTING) {
      const t = this.peek();
      throw new NestingFault({
        line: t.line,
        column: t.column,
        message: `nesting deeper than ${DSL_MAX_NESTING} levels; flatten the nested expressions or blocks`,
      });
    }
  }

  // ---- token helpers --------------------------------------------------

  private peek(k = 0): Token {
    const i = this.pos + k;
    return this.ts.get(i < this.last ? i : this.last);
  }
  private next(): Token {
    const t = this.ts.get(this.pos);
    if (this.pos < this.last) this.pos++;
    return t;
  }
  /** Moves past the current token without building a Token object. */
  private advance(): void {
    if (this.pos < this.last) this.pos++;
  }
  private idx(k: number): number {
    const i = this.pos + k;
    return i < this.last ? i : this.last;
  }
  private kindAt(k = 0): TokenKind {
    return this.kinds[this.idx(k)] as TokenKind;
  }
  private textAt(k = 0): string {
    return this.texts[this.idx(k)]!;
  }
  private isPunct(s: string, k = 0): boolean {
    const i = this.idx(k);
    return this.kinds[i] === PUNCT && this.texts[i] === s;
  }
  private isWord(w: string, k = 0): boolean {
    const i = this.idx(k);
    return this.kinds[i] === IDENT && this.texts[i] === w;
  }
  private tok(i: number): Token {
    return this.ts.get(i < this.last ? i : this.last);
  }
  private eat(s: string): boolean {
    if (this.isPunct(s)) {
      this.advance();
      return true;
    }
    return false;
  }
  private expectName(why: string): Token {
    const t = this.peek();
    if (t.kind === IDENT) return this.next();
    return this.fail(`expected a name ${why}, found ${describeToken(t)}`);
  }
  /** Moves past the current (closing) token and returns where it ends. */
  private closeEnd(): number {
    const end = this.ts.end[this.pos]!;
    this.advance();
    return end;
  }
  private prevEnd(): number {
    return this.ts.end[this.pos > 0 ? this.pos - 1 : 0]!;
  }

  /** A top-level keyword at column 1 followed by a name: a new item even inside an unclosed block. */
  private atItemStartInColumnOne(): boolean {
    const i = this.pos;
    return this.kinds[i] === IDENT && this.ts.column(i) === 1 && this.startsItemAt(i);
  }
  private startsItemAt(i: number): boolean {
    if (this.kinds[i] !== IDENT || !TOP_LEVEL.has(this.texts[i]!)) return false;
    const n = Math.min(i + 1, this.last);
    return this.kinds[n] === IDENT || (this.texts[i] === 'metadata' && this.kinds[n] === PUNCT && this.texts[n] === '{');
  }

  /** Reports an unclosed block at the current token (end of file or a new top-level item). */
  private unclosed(what: string, open: Token): void {
    this.softError(`expected \`}\` to close ${what} opened at ${open.line}:${open.column}, found ${describeToken(this.peek())}`);
  }

  // ---- recovery -------------------------------------------------------

  private skipToTopLevel(itemStart: number): void {
    let p = this.pos;
    if (p <= itemStart) p = itemStart + 1;
    const match = this.match;
    while (p < this.last) {
      if (this.kinds[p] === PUNCT && isOpener(this.texts[p]!) && match[p]! > p) {
        p = match[p]! + 1;
        continue;
      }
      if (this.startsItemAt(p)) break;
      p++;
    }
    this.pos = Math.min(p, this.last);
  }

  /**
   * Skips the rest of a broken construct inside the block opened at `openIdx`:
   * stops after a `;` (when `semicolon`), before the `}` that closes the block,
   * before a token accepted by `restart`, or before a column-1 top-level item.
   */
  private skipWithin(openIdx: number, from: number, semicolon: boolean, restart: (p: number) => boolean): void {
    let p = Math.max(this.pos, from);
    const match = this.match;
    while (p < this.last) {
      const text = this.texts[p]!;
      if (this.kinds[p] === PUNCT) {
        if (isOpener(text)) {
          const m = match[p]!;
          p = m > p ? m + 1 : p + 1;
          continue;
        }
        if (text === '}') {
          const m = match[p]!;
          if (m > openIdx) {
            p++;
            continue;
          }
          break;
        }
        if (semicolon && text === ';') {
          p++;
          break;
        }
      } else if (this.ts.column(p) === 1 && this.startsItemAt(p)) {
        break;
      }
      if (p > from && restart(p)) break;
      p++;
    }
    this.pos = Math.min(p, this.last);
  }

  // ---- items ----------------------------------------------------------

  private parseItem(): Item | null {
    const t = this.peek();
    if (t.kind === IDENT) {
      switch (t.text) {
        case 'metadata':
          return this.parseMetadata();
        case 'agent':
          return this.parseAgent();
        case 'policy':
          return this.parsePolicy();
        case 'type':
          return this.parseTypeDecl();
        case 'function':
          return this.parseFunction();
        case 'schedule':
        case 'channel':
        case 'memory':
        case 'webhook':
          return this.parseNamedBlock(t.text);
        case 'with':
          return this.defer('a `with` block belongs inside an agent body, not at the top level');
      }
    }
    if (t.kind === PUNCT && t.text === ';') {
      this.advance();
      return null;
    }
    return this.defer(
      `expected a top-level item (\`metadata\`, \`agent\`, \`policy\`, \`type\`, \`function\`, \`schedule\`, \`channel\`, \`memory\` or \`webhook\`), found ${describeToken(t)}`,
    );
  }

  private parseMetadata(): Item {
    const kw = this.next();
    const block = this.parsePairBlock('`metadata` block', kw, false);
    if (this.fault !== null) return FAILED;
    return { kind: 'metadata', block, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  private parseNamedBlock(kind: 'schedule' | 'channel' | 'memory' | 'webhook'): Item {
    const kw = this.next();
    const name = this.kindAt() === IDENT ? this.next() : this.expectName(`after \`${kind}\``);
    if (this.fault !== null) return FAILED;
    const block = this.parsePairBlock(`${kind} \`${name.text}\``, kw, kind === 'channel');
    if (this.fault !== null) return FAILED;
    return { kind, name: name.text, block, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  private parseTypeDecl(): Item {
    const kw = this.next();
    const name = this.expectName('after `type`');
    if (this.fault !== null) return FAILED;
    if (!this.eat('=')) return this.expected('=', `after \`type ${name.text}\``);
    const type = this.parseType();
    if (this.fault !== null) return FAILED;
    this.eat(';');
    return { kind: 'type', name: name.text, type, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  private parseAgent(): AgentDecl {
    const kw = this.next();
    const name = this.expectName('after `agent`');
    if (this.fault !== null) return FAILED;
    const what = `agent \`${name.text}\``;
    let params: Param[] | null = null;
    let paramsPos: Pos | null = null;
    if (this.isPunct('(')) {
      paramsPos = { line: this.peek().line, column: this.peek().column };
      params = this.parseParams(what);
      if (this.fault !== null) return FAILED;
    }
    let returnType: TypeRef | null = null;
    if (this.eat('->')) {
      returnType = this.parseType();
      if (this.fault !== null) return FAILED;
    }
    if (!this.isPunct('{')) return this.expected('{', `to open the body of ${what}`);
    const open = this.next();
    const openIdx = this.pos - 1;
    const members: AgentMember[] = [];
    const agent: AgentDecl = { kind: 'agent', name: name.text, params, paramsPos, returnType, members, line: kw.line, column: kw.column, start: kw.start, end: open.end };
    for (;;) {
      const step = this.bodyStep(what, kw);
      if (step === 'end') break;
      if (step === 'separator') continue;
      // Member heads are read from the token arrays (no Token objects).
      const memberStart = this.pos;
      const word = this.kinds[memberStart] === IDENT ? this.texts[memberStart]! : '';
      let member: AgentMember;
      if (word === 'capabilities' && (this.isPunct('=', 1) || this.isPunct(':', 1))) {
        this.advance();
        this.advance();
        const value = this.parseExpression();
        if (this.fault === null) this.eat(';') || this.eat(',');
        member = { kind: 'capabilities', value, line: this.ts.line[memberStart]!, column: this.ts.column(memberStart) };
      } else if (word === 'policy') {
        member = this.parsePolicy();
      } else if (word === 'function') {
        member = this.parseFunction();
      } else if (word === 'with') {
        member = this.parseWith(what);
      } else {
        const t = this.peek();
        this.recoverMember(
          { line: t.line, column: t.column, message: `unexpected ${describeToken(t)} in ${what}; an agent body holds only \`capabilities = [...]\`, \`policy\`, \`function\` and \`with\` blocks` },
          openIdx,
          memberStart,
        );
        continue;
      }
      const fault = this.fault;
      if (fault !== null) {
        this.fault = null;
        this.recoverMember(fault, openIdx, memberStart);
      } else {
        members.push(member);
      }
    }
    agent.end = this.prevEnd();
    return agent;
  }

  /**
   * The head of an agent-body or key/value-block loop: consumes the closing `}`
   * ('end'), reports a body left unclosed at end of file or at the next item
   * ('end'), skips a `;` or `,` separator ('separator'), or leaves the next member
   * in place ('member').
   */
  private bodyStep(what: string, kw: Token): 'end' | 'separator' | 'member' {
    const kind = this.kinds[this.pos];
    const text = this.texts[this.pos];
    if (kind === PUNCT && text === '}') {
      this.advance();
      return 'end';
    }
    if (kind === EOF || this.atItemStartInColumnOne()) {
      this.unclosed(what, kw);
      return 'end';
    }
    if (kind === PUNCT && (text === ';' || text === ',')) {
      this.advance();
      return 'separator';
    }
    return 'member';
  }

  private recoverMember(diag: SyntaxDiagnostic, openIdx: number, memberStart: number): void {
    this.record(diag);
    this.depth = 0;
    this.noRecord = false;
    this.skipWithin(openIdx, memberStart + 1, false, (p) => {
      return this.kinds[p] === IDENT && AGENT_MEMBERS.has(this.texts[p]!);
    });
  }

  private parseWith(owner: string): WithBlock {
    const kwIdx = this.pos;
    const kw = this.next();
    const attributes: WithAttribute[] = [];
    if (!this.isPunct('{')) {
      for (;;) {
        // Attribute names are read from the token arrays (no Token objects).
        const ni = this.pos;
        if (this.kinds[ni] !== IDENT) return this.fail(`expected a name of a \`with\` attribute, found ${describeToken(this.peek())}`);
        const name = this.texts[ni]!;
        this.advance();
        if (!this.eat('=') && !this.eat(':')) return this.fail(`expected \`=\` after \`with\` attribute \`${name}\`, found ${describeToken(this.peek())}`);
        const saved = this.noRecord;
        this.noRecord = true;
        const value = this.parseExpression();
        if (this.fault !== null) return FAILED;
        this.noRecord = saved;
        attributes.push({ name, value, line: this.ts.line[ni]!, column: this.ts.column(ni) });
        if (!this.eat(',')) break;
      }
    }
    const body = this.parseBlock(`\`with\` block of ${owner}`, kwIdx);
    if (this.fault !== null) return FAILED;
    return { kind: 'with', attributes, body, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  private parsePolicy(): PolicyDecl {
    const kw = this.next();
    const name = this.expectName('after `policy`');
    if (this.fault !== null) return FAILED;
    const what = `policy \`${name.text}\``;
    if (!this.eat('{')) return this.expected('{', `to open ${what}`);
    const openIdx = this.pos - 1;
    this.enter();
    const rules: PolicyRule[] = [];
    const savedDepth = this.depth;
    for (;;) {
      // Rule heads are read from the token arrays (no Token objects).
      const ruleStart = this.pos;
      const tk = this.kinds[ruleStart];
      const tt = this.texts[ruleStart]!;
      if (tk === PUNCT && tt === '}') {
        this.advance();
        break;
      }
      if (tk === EOF || this.atItemStartInColumnOne()) {
        this.unclosed(what, kw);
        break;
      }
      if (tk === PUNCT && (tt === ';' || tt === ',')) {
        this.advance();
        continue;
      }
      if (!(tk === IDENT && isRuleKind(tt) && this.isPunct(':', 1))) {
        const t = this.peek();
        const message = `expected a rule (\`allow:\`, \`deny:\`, \`require:\` or \`audit:\`) in ${what}, found ${describeToken(t)}`;
        this.recoverRule({ line: t.line, column: t.column, message }, savedDepth, openIdx, ruleStart);
        continue;
      }
      this.advance();
      this.advance();
      const rule = this.parseRuleBody(tt as PolicyRule['kind'], ruleStart);
      const fault = this.fault;
      if (fault !== null) {
        this.fault = null;
        this.recoverRule(fault, savedDepth, openIdx, ruleStart);
      } else {
        rules.push(rule);
      }
    }
    this.depth--;
    return { kind: 'policy', name: name.text, rules, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  /** A rule after its `kind:` head: selector, optional `if` condition and `with` tail. */
  private parseRuleBody(kind: PolicyRule['kind'], ruleStart: number): PolicyRule {
    const selector = this.parseExpression();
    if (this.fault !== null) return FAILED;
    let condition: Expr | null = null;
    let conditionTokens = 0;
    if (this.isWord('if')) {
      this.advance();
      const from = this.pos;
      condition = this.conditionTrees ? this.parseExpression() : this.skimCondition(from);
      if (this.fault !== null) return FAILED;
      conditionTokens = this.pos - from;
    }
    let withTail: Expr | null = null;
    if (this.isWord('with')) {
      this.advance();
      withTail = this.parseExpression();
      if (this.fault !== null) return FAILED;
    }
    this.eat(';') || this.eat(',');
    return { kind, selector, condition, conditionTokens, withTail, line: this.ts.line[ruleStart]!, column: this.ts.column(ruleStart) };
  }

  /** A rule condition starting at token `from`, parsed but not built (see ParseOptions.conditionTrees). */
  private skimCondition(from: number): Expr {
    const saved = this.discarding;
    this.discarding = true;
    this.parseExpression();
    this.discarding = saved;
    if (this.fault !== null) return FAILED;
    const ts = this.ts;
    return { kind: 'group', inner: SKIPPED.other, line: ts.line[from]!, column: ts.column(from), start: ts.start[from]!, end: this.prevEnd() };
  }

  private recoverRule(diag: SyntaxDiagnostic, savedDepth: number, openIdx: number, ruleStart: number): void {
    this.record(diag);
    this.depth = savedDepth;
    this.noRecord = false;
    this.skipWithin(openIdx, ruleStart + 1, true, (p) => {
      return this.kinds[p] === IDENT && isRuleKind(this.texts[p]!) && this.kinds[p + 1] === PUNCT && this.texts[p + 1] === ':';
    });
  }

  private parseFunction(): FunctionDecl {
    const kwIdx = this.pos;
    const kw = this.next();
    const name = this.expectName('after `function`');
    if (this.fault !== null) return FAILED;
    const what = `function \`${name.text}\``;
    if (!this.isPunct('(')) return this.fail(`expected \`(\` to start the parameters of ${what}, found ${describeToken(this.peek())}`);
    const params = this.parseParams(what);
    if (this.fault !== null) return FAILED;
    let returnType: TypeRef | null = null;
    if (this.eat('->')) {
      returnType = this.parseType();
      if (this.fault !== null) return FAILED;
    }
    const body = this.parseBlock(what, kwIdx);
    if (this.fault !== null) return FAILED;
    return { kind: 'function', name: name.text, params, returnType, body, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }

  private parseParams(what: string): Param[] {
    const open = this.next();
    const params: Param[] = [];
    while (!this.isPunct(')')) {
      const ni = this.pos;
      if (this.kinds[ni] !== IDENT) return this.fail(`expected a name of a parameter of ${what}, found ${describeToken(this.peek())}`);
      this.advance();
      let type: TypeRef | null = null;
      if (this.eat(':')) {
        type = this.parseType();
        if (this.fault !== null) return FAILED;
      }
      params.push({ name: this.texts[ni]!, type, line: this.ts.line[ni]!, column: this.ts.column(ni) });
      if (!this.eat(',')) break;
    }
    if (!this.eat(')')) return this.expected(')', `to close the parameters of ${what} opened at ${open.line}:${open.column}`);
    return this.fit(params);
  }

  /** `{ key = value ... }` with optional nested `name { ... }` blocks and, in channels, policies. */
  private parsePairBlock(what: string, kw: Token, allowPolicies: boolean): PairBlock {
    if (!this.eat('{')) return this.expected('{', `to open ${what}`);
    const openIdx = this.pos - 1;
    this.enter();
    const savedDepth = this.depth;
    const pairs: Pair[] = [];
    const policies: PolicyDecl[] = [];
    for (;;) {
      const step = this.bodyStep(what, kw);
      if (step === 'end') break;
      if (step === 'separator') continue;
      const t = this.peek();
      const pairStart = this.pos;
      if (allowPolicies && t.kind === IDENT && t.text === 'policy' && this.peek(1).kind === IDENT) {
        const policy = this.parsePolicy();
        if (this.fault === null) {
          policies.push(policy);
          continue;
        }
      } else {
        const pair = this.parsePair(t, what);
        if (this.fault === null) {
          pairs.push(pair);
          continue;
        }
      }
      const fault = this.fault!;
      this.fault = null;
      this.record(fault);
      this.depth = savedDepth;
      this.noRecord = false;
      const startLine = this.ts.line[pairStart]!;
      this.skipWithin(openIdx, pairStart + 1, true, (p) => {
        const y = this.texts[p + 1];
        return (
          this.ts.line[p]! > startLine &&
          (this.kinds[p] === IDENT || this.kinds[p] === STRING) &&
          this.kinds[p + 1] === PUNCT &&
          (y === '=' || y === ':' || y === '{')
        );
      });
    }
    this.depth--;
    return { pairs, policies };
  }

  /** One `key = value` pair, or a nested `key { ... }` block as a record; `t` is the key token (the current token). */
  private parsePair(t: Token, what: string): Pair {
    if (t.kind !== IDENT && t.kind !== STRING) {
      return this.fail(`expected a key (\`name = value\`) in ${what}, found ${describeToken(t)}`);
    }
    this.advance();
    let value: Expr;
    if (this.isPunct('{')) {
      const inner = this.parsePairBlock(`block ${keyText(t)} in ${what}`, t, false);
      if (this.fault !== null) return FAILED;
      value = {
        kind: 'record',
        typeName: null,
        fields: inner.pairs.map((p) => ({ key: p.key, value: p.value })),
        line: t.line,
        column: t.column,
        start: t.start,
        end: this.prevEnd(),
      };
    } else {
      if (!this.eat('=') && !this.eat(':')) {
        return this.fail(`expected \`=\` or \`:\` after key ${keyText(t)} in ${what}, found ${describeToken(this.peek())}`);
      }
      value = this.parseExpression();
      if (this.fault !== null) return FAILED;
    }
    return { key: t.text, value, line: t.line, column: t.column };
  }

  // ---- types ----------------------------------------------------------

  private parseType(): TypeRef {
    this.enter();
    // Read from the token arrays: types are frequent and need no Token object.
    const ti = this.idx(0);
    const line = this.ts.line[ti]!;
    const column = this.ts.column(ti);
    let result: TypeRef;
    if (this.eat('{')) {
      const fields: { name: string; type: TypeRef }[] = [];
      while (!this.isPunct('}')) {
        const name = this.peek().kind === STRING ? this.next() : this.expectName('of a record type field');
        if (this.fault !== null) return FAILED;
        if (!this.eat(':')) return this.expected(':', `after record type field ${keyText(name)}`);
        const type = this.parseType();
        if (this.fault !== null) return FAILED;
        fields.push({ name: name.text, type });
        if (!this.eat(',') && !this.eat(';')) break;
      }
      if (!this.eat('}')) return this.expected('}', `to close the record type opened at ${line}:${column}`);
      result = { kind: 'record', fields, line, column };
    } else if (this.eat('[')) {
      const element = this.parseType();
      if (this.fault !== null) return FAILED;
      if (!this.eat(']')) return this.expected(']', `to close the array type opened at ${line}:${column}`);
      result = { kind: 'array', element, optional: this.eat('?'), line, column };
    } else if (this.kinds[ti] === IDENT) {
      this.advance();
      let name = this.texts[ti]!;
      while (this.isPunct('::') && this.peek(1).kind === IDENT) {
        this.advance();
        name += '::' + this.next().text;
      }
      let args = NO_TYPE_ARGS;
      if (this.eat('<')) {
        args = [];
        do {
          const arg = this.parseType();
          if (this.fault !== null) return FAILED;
          args.push(arg);
        } while (this.eat(','));
        if (!this.eat('>')) return this.expected('>', `to close the type arguments of \`${name}\``);
        args = this.fit(args);
      }
      result = { kind: 'named', name, args, optional: this.eat('?'), line, column };
    } else {
      return this.fail(`expected a type (such as \`String\`, \`int\`, \`Array<String>\` or \`{ field: Type }\`), found ${describeToken(this.peek())}`);
    }
    this.depth--;
    return result;
  }

  // ---- blocks and statements -----------------------------------------

  /** A `{ statements }` block; `owner` is the index of the token that opens the construct (for the unclosed-block message). */
  private parseBlock(what: string, owner: number): Block {
    if (!this.isPunct('{')) return this.expected('{', `to open the body of ${what}`);
    const openIdx = this.pos;
    this.advance();
    this.enter();
    const savedDepth = this.depth;
    const savedNoRecord = this.noRecord;
    this.noRecord = false;
    const retain = this.retainBodies;
    const savedDiscarding = this.discarding;
    this.discarding = !retain;
    const statements: Stmt[] = retain ? [] : NO_STATEMENTS;
    let tail: Expr | null = null;
    let count = 0;
    for (;;) {
      const stmtStart = this.pos;
      const k = this.kinds[stmtStart];
      if (k === PUNCT && this.texts[stmtStart] === '}') {
        this.advance();
        break;
      }
      if (k === EOF || this.atItemStartInColumnOne()) {
        this.unclosed(what, this.tok(owner));
        break;
      }
      const stmt = this.parseStatement();
      const fault = this.fault;
      if (fault !== null) {
        this.fault = null;
        this.recoverStatement(fault, savedDepth, openIdx, stmtStart);
      } else if (stmt !== null) {
        count++;
        if (retain) statements.push(stmt);
      } else if (this.tail !== null) {
        // A tail is followed by `}`, so a block has at most one.
        count++;
        if (retain) tail = this.tail;
        this.tail = null;
      }
    }
    this.depth--;
    this.noRecord = savedNoRecord;
    this.discarding = savedDiscarding;
    if (savedDiscarding) return SKIPPED_BLOCK;
    const ts = this.ts;
    return { kind: 'block', statements: retain ? this.fit(statements) : statements, tail, count, line: ts.line[openIdx]!, column: ts.column(openIdx), start: ts.start[openIdx]!, end: this.prevEnd() };
  }

  private recoverStatement(diag: SyntaxDiagnostic, savedDepth: number, openIdx: number, stmtStart: number): void {
    this.record(diag);
    this.depth = savedDepth;
    this.noRecord = false;
    this.skipWithin(openIdx, stmtStart, true, () => false);
  }

  /** A statement, or null for an empty `;` or a block's trailing expression (left in `this.tail`). */
  private parseStatement(): Stmt | null {
    const si = this.pos;
    const ts = this.ts;
    const kind = this.kinds[si];
    if (kind === PUNCT && this.texts[si] === ';') {
      this.advance();
      return null;
    }
    if (kind === IDENT) {
      // Keyword statements, read from the token arrays; only those owning a block build a Token (for messages).
      switch (this.texts[si]!) {
        case 'let': {
          this.advance();
          const pattern = this.parsePattern();
          if (this.fault !== null) return FAILED;
          let type: TypeRef | null = null;
          if (this.eat(':')) {
            type = this.parseType();
            if (this.fault !== null) return FAILED;
          }
          if (!this.eat('=')) return this.expected('=', 'after the name in `let`');
          const value = this.parseExpression();
          if (this.fault !== null) return FAILED;
          if (!this.endStatementAt('`let` statement', si)) return null;
          if (!this.retainBodies) return DISCARDED;
          return { kind: 'let', pattern, type, value, line: ts.line[si]!, column: ts.column(si) };
        }
        case 'return': {
          this.advance();
          const value = this.isPunct(';') || this.isPunct('}') ? null : this.parseExpression();
          if (this.fault !== null) return FAILED;
          if (!this.endStatementAt('`return` statement', si)) return null;
          if (!this.retainBodies) return DISCARDED;
          return { kind: 'return', value, line: ts.line[si]!, column: ts.column(si) };
        }
        case 'for': {
          this.advance();
          const binding = this.parsePattern();
          if (this.fault !== null) return FAILED;
          if (!this.isWord('in')) return this.fail(`expected \`in\` after the loop variable of \`for\`, found ${describeToken(this.peek())}`);
          this.advance();
          const iterable = this.parseCondition();
          if (this.fault !== null) return FAILED;
          const body = this.parseBlock(`\`for\` loop`, si);
          if (this.fault !== null) return FAILED;
          this.eat(';');
          if (!this.retainBodies) return DISCARDED;
          return { kind: 'for', binding, iterable, body, line: ts.line[si]!, column: ts.column(si) };
        }
        case 'try': {
          this.advance();
          const body = this.parseBlock('`try` block', si);
          if (this.fault !== null) return FAILED;
          const catches: { binding: string | null; type: TypeRef | null; body: Block; line: number; column: number }[] = [];
          while (this.isWord('catch')) {
            const ci = this.pos;
            this.advance();
            let binding: string | null = null;
            let type: TypeRef | null = null;
            const paren = this.eat('(');
            if (this.kinds[this.pos] === IDENT) {
              binding = this.texts[this.pos]!;
              this.advance();
              if (this.eat(':')) {
                type = this.parseType();
                if (this.fault !== null) return FAILED;
              }
            }
            if (paren && !this.eat(')')) return this.expected(')', 'to close the `catch` binding');
            const catchBody = this.parseBlock('`catch` block', ci);
            if (this.fault !== null) return FAILED;
            catches.push({ binding, type, body: catchBody, line: ts.line[ci]!, column: ts.column(ci) });
          }
          if (catches.length === 0) return this.fail(`expected \`catch\` after the \`try\` block opened at ${ts.line[si]}:${ts.column(si)}, found ${describeToken(this.peek())}`);
          this.eat(';');
          if (!this.retainBodies) return DISCARDED;
          return { kind: 'try', body, catches, line: ts.line[si]!, column: ts.column(si) };
        }
        case 'while':
        case 'loop':
          if (this.peek(1).kind !== PUNCT || this.isPunct('(', 1) || this.isPunct('{', 1)) {
            return this.defer(`\`${this.texts[si]}\` loops are not part of the DSL; iterate with \`for x in items { }\``);
          }
          break;
      }
    }
    const expr = this.parseExpression();
    if (this.fault !== null) return FAILED;
    const oi = this.pos;
    if (this.kinds[oi] === PUNCT) {
      const op = this.texts[oi]!;
      if (isAssignOp(op)) {
        if (expr.kind !== 'ident' && expr.kind !== 'member' && expr.kind !== 'index') {
          return this.defer(`cannot assign to this expression; the target of \`${op}\` must be a name, a member (\`a.b\`) or an index (\`a[i]\`)`);
        }
        this.advance();
        const value = this.parseExpression();
        if (this.fault !== null) return FAILED;
        if (!this.endStatementAt('assignment', si)) return null;
        if (!this.retainBodies) return DISCARDED;
        return { kind: 'assign', op, target: expr, value, line: ts.line[si]!, column: ts.column(si) };
      }
      if (op === ';') {
        this.advance();
        return this.expressionStatement(expr, si);
      }
    }
    if (expr.kind === 'if' || expr.kind === 'match') return this.expressionStatement(expr, si);
    if (this.isPunct('}')) {
      this.tail = expr;
      return null;
    }
    if (!this.endStatementAt('expression statement', si)) return null;
    return this.expressionStatement(expr, si);
  }

  private expressionStatement(expr: Expr, si: number): Stmt {
    if (!this.retainBodies) return DISCARDED;
    return { kind: 'expr', expr, line: this.ts.line[si]!, column: this.ts.column(si) };
  }

  /** Requires `;` after the statement starting at token `si`. A missing one before a new line is reported without losing the next statement. */
  private endStatementAt(what: string, si: number): boolean {
    if (this.eat(';')) return true;
    const t = this.peek();
    const ts = this.ts;
    const message = `expected \`;\` after the ${what} starting at ${ts.line[si]}:${ts.column(si)}, found ${describeToken(t)}`;
    const prevLine = ts.line[this.pos > 0 ? this.pos - 1 : 0]!;
    if (t.kind === PUNCT && t.text === '}') {
      this.softError(message, t);
      return true;
    }
    if (t.line > prevLine || t.kind === EOF) {
      this.softError(message, t);
      return true;
    }
    this.defer(message, t);
    return false;
  }

  // ---- patterns -------------------------------------------------------

  private parsePattern(): Pattern {
    this.enter();
    const first = this.parseSinglePattern();
    if (this.fault !== null) return FAILED;
    let result = first;
    if (this.isPunct('|')) {
      const alternatives = [first];
      while (this.eat('|')) {
        const alternative = this.parseSinglePattern();
        if (this.fault !== null) return FAILED;
        alternatives.push(alternative);
      }
      result = { kind: 'or', alternatives, line: first.line, column: first.column };
    }
    this.depth--;
    return result;
  }

  private parseSinglePattern(): Pattern {
    // A plain name (`let x`, `for item in`), the common case, read from the token arrays.
    const pi = this.idx(0);
    if (this.kinds[pi] === IDENT) {
      const name = this.texts[pi]!;
      if (name !== '_' && name !== 'true' && name !== 'false' && !isReserved(name) && !this.isPunct('::', 1) && !this.isPunct('(', 1) && !this.isPunct('{', 1)) {
        this.advance();
        if (this.discarding) return SKIPPED_PATTERN;
        return { kind: 'binding', name, line: this.ts.line[pi]!, column: this.ts.column(pi) };
      }
    }
    const t = this.peek();
    switch (t.kind) {
      case STRING:
      case NUMBER:
      case DURATION:
        // Literal tokens always parse.
        return { kind: 'literal', value: this.parsePrimary(), line: t.line, column: t.column };
      case PUNCT:
        if (t.text === '-' && this.peek(1).kind === NUMBER) {
          const value = this.parseUnary();
          if (this.fault !== null) return FAILED;
          return { kind: 'literal', value, line: t.line, column: t.column };
        }
        if (t.text === '[' || t.text === '(') {
          const close = t.text === '[' ? ']' : ')';
          this.advance();
          const items: Pattern[] = [];
          while (!this.isPunct(close)) {
            const item = this.parsePattern();
            if (this.fault !== null) return FAILED;
            items.push(item);
            if (!this.eat(',')) break;
          }
          if (!this.eat(close)) return this.expected(close, `to close the pattern opened at ${t.line}:${t.column}`);
          if (t.text === '(' && items.length === 1) return items[0]!;
          return t.text === '[' ? { kind: 'array', items, line: t.line, column: t.column } : { kind: 'constructor', name: '', args: items, line: t.line, column: t.column };
        }
        break;
      case IDENT: {
        if (t.text === '_') {
          this.advance();
          return { kind: 'wildcard', line: t.line, column: t.column };
        }
        if (t.text === 'true' || t.text === 'false') return { kind: 'literal', value: this.parsePrimary(), line: t.line, column: t.column };
        if (isReserved(t.text)) break;
        this.advance();
        let name = t.text;
        while (this.isPunct('::') && this.peek(1).kind === IDENT) {
          this.advance();
          name += '::' + this.next().text;
        }
        if (this.eat('(')) {
          const args: Pattern[] = [];
          while (!this.isPunct(')')) {
            const arg = this.parsePattern();
            if (this.fault !== null) return FAILED;
            args.push(arg);
            if (!this.eat(',')) break;
          }
          if (!this.eat(')')) return this.expected(')', `to close the arguments of pattern \`${name}\``);
          return { kind: 'constructor', name, args, line: t.line, column: t.column };
        }
        if (this.isPunct('{')) {
          const open = this.next();
          const fields: { key: string; pattern: Pattern | null }[] = [];
          while (!this.isPunct('}')) {
            const key = this.expectName('of a field in a record pattern');
            if (this.fault !== null) return FAILED;
            const pattern = this.eat(':') ? this.parsePattern() : null;
            if (this.fault !== null) return FAILED;
            fields.push({ key: key.text, pattern });
            if (!this.eat(',')) break;
          }
          if (!this.eat('}')) return this.expected('}', `to close the record pattern opened at ${open.line}:${open.column}`);
          return { kind: 'record', typeName: name, fields, line: t.line, column: t.column };
        }
        return { kind: 'binding', name, line: t.line, column: t.column };
      }
    }
    return this.fail(`expected a pattern (\`_\`, a literal, a name, \`Name(...)\` or \`[...]\`), found ${describeToken(t)}`);
  }

  // ---- expressions ----------------------------------------------------

  private parseExpression(): Expr {
    this.enter();
    const e = this.parseBinary(OR_PREC);
    if (this.fault !== null) return FAILED;
    this.depth--;
    return e;
  }

  /** An expression directly followed by a block: a bare `Name {` is never a record here. */
  private parseCondition(): Expr {
    const saved = this.noRecord;
    this.noRecord = true;
    const e = this.parseExpression();
    if (this.fault !== null) return FAILED;
    this.noRecord = saved;
    return e;
  }

  /**
   * Binary operators by precedence climbing: one loop per precedence level
   * actually present instead of a call per level for every operand. All
   * operators are left-associative; binding power comes from binaryPrecedence.
   */
  private parseBinary(minPrec: number): Expr {
    let left = this.parseUnary();
    if (this.fault !== null) return FAILED;
    for (;;) {
      const i = this.idx(0);
      const prec = binaryPrecedence(this.kinds[i]!, this.texts[i]!);
      if (prec < minPrec) return left;
      const op = this.texts[i]!;
      this.advance();
      const right = prec === MUL_PREC ? this.parseUnary() : this.parseBinary(prec + 1);
      if (this.fault !== null) return FAILED;
      left = this.discarding ? SKIPPED.other : { kind: 'binary', op, left, right, line: left.line, column: left.column, start: left.start, end: right.end };
    }
  }

  private parseUnary(): Expr {
    // Prefix operators are collected in a loop; each one counts as a nesting level.
    let ops: Token[] | null = null;
    for (;;) {
      const k = this.kindAt();
      const op = this.textAt();
      if ((k === PUNCT && (op === '!' || op === '-')) || (k === IDENT && op === 'not')) {
        (ops ??= []).push(this.next());
        this.enter();
      } else break;
    }
    if (ops === null) return this.parsePostfix();
    let e = this.parsePostfix();
    if (this.fault !== null) return FAILED;
    for (let k = ops.length - 1; k >= 0; k--) {
      const op = ops[k]!;
      e = this.discarding ? SKIPPED.other : { kind: 'unary', op: op.text as '!' | 'not' | '-', operand: e, line: op.line, column: op.column, start: op.start, end: e.end };
    }
    this.depth -= ops.length;
    return e;
  }

  private parsePostfix(): Expr {
    let e = this.parsePrimary();
    if (this.fault !== null) return FAILED;
    for (;;) {
      if (this.kindAt() !== PUNCT) return e;
      const op = this.textAt();
      if (op !== '.' && op !== '(' && op !== '[') return e;
      if (op === '.') {
        // Member access is the common case: read the name straight from the token arrays.
        this.advance();
        const pi = this.pos;
        const pk = this.kinds[pi];
        if (pk !== IDENT && pk !== NUMBER) return this.fail(`expected a member name after \`.\`, found ${describeToken(this.peek())}`);
        this.advance();
        e = this.discarding ? SKIPPED.member : { kind: 'member', object: e, property: this.texts[pi]!, line: e.line, column: e.column, start: e.start, end: this.ts.end[pi]! };
        continue;
      }
      // Calls and indexing, read from the token arrays (no Token objects).
      const ts = this.ts;
      const oi = this.pos;
      this.advance();
      const saved = this.noRecord;
      this.noRecord = false;
      if (op === '(') {
        const discarding = this.discarding;
        const args: { name: string | null; value: Expr }[] = discarding ? NO_ARGS : [];
        while (!this.isPunct(')')) {
          let name: string | null = null;
          if (this.kinds[this.pos] === IDENT && (this.isPunct('=', 1) || this.isPunct(':', 1))) {
            name = this.texts[this.pos]!;
            this.advance();
            this.advance();
          }
          const value = this.parseExpression();
          if (this.fault !== null) return FAILED;
          if (!discarding) args.push({ name, value });
          if (!this.eat(',')) break;
        }
        if (!this.isPunct(')')) return this.expected(')', `to close the call opened at ${ts.line[oi]}:${ts.column(oi)}`);
        const end = this.closeEnd();
        this.noRecord = saved;
        e = discarding ? SKIPPED.other : { kind: 'call', callee: e, args: this.fit(args), line: e.line, column: e.column, start: e.start, end };
      } else {
        const index = this.parseExpression();
        if (this.fault !== null) return FAILED;
        if (!this.isPunct(']')) return this.expected(']', `to close the index opened at ${ts.line[oi]}:${ts.column(oi)}`);
        const end = this.closeEnd();
        this.noRecord = saved;
        e = this.discarding ? SKIPPED.index : { kind: 'index', object: e, index, line: e.line, column: e.column, start: e.start, end };
      }
    }
  }

  /** `{` followed by `}` or by `key:` starts a record literal. */
  private looksLikeRecord(k: number): boolean {
    const a = this.idx(k + 1);
    const ak = this.kinds[a];
    if (ak === PUNCT && this.texts[a] === '}') return true;
    return (ak === IDENT || ak === STRING) && this.isPunct(':', k + 2);
  }

  private parsePrimary(): Expr {
    const i = this.idx(0);
    const kind = this.kinds[i] as TokenKind;
    const ts = this.ts;
    // Fast paths build nodes straight from the token arrays (no Token object).
    switch (kind) {
      case STRING:
        this.advance();
        if (this.discarding) return SKIPPED.other;
        return { kind: 'string', value: ts.text[i]!, line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
      case NUMBER:
        this.advance();
        if (this.discarding) return SKIPPED.other;
        return { kind: 'number', value: numberValue(ts.text[i]!), raw: ts.text[i]!, line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
      case DURATION:
        this.advance();
        if (this.discarding) return SKIPPED.other;
        return { kind: 'duration', raw: ts.text[i]!, seconds: durationSeconds(ts.text[i]!), line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
      case VAULT:
        this.advance();
        if (this.discarding) return SKIPPED.other;
        return { kind: 'vault', path: ts.text[i]!, line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
      case PUNCT:
        if (ts.text[i] === '[') return this.parseArray(i);
        break;
      case IDENT: {
        const name = ts.text[i]!;
        if (name === 'true' || name === 'false') {
          this.advance();
          if (this.discarding) return SKIPPED.other;
          return { kind: 'bool', value: name === 'true', line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
        }
        const after = i + 1 <= this.last ? i + 1 : this.last;
        const na = ts.text[after]!;
        if (
          !isKeywordPrimary(name) &&
          !(ts.kind[after] === PUNCT && (na === '=>' || na === '::' || na === '{'))
        ) {
          this.advance();
          if (this.discarding) return SKIPPED.ident;
          return { kind: 'ident', name, line: ts.line[i]!, column: ts.column(i), start: ts.start[i]!, end: ts.end[i]! };
        }
        break;
      }
    }
    switch (kind) {
      case IDENT:
        return this.parseWordPrimary(i);
      case PUNCT:
        if (ts.text[i] === '(') return this.parseParenthesized(i);
        if (ts.text[i] === '{') return this.parseRecord(null, i);
        break;
    }
    return this.fail(`expected an expression, found ${describeToken(this.peek())}`);
  }

  /** An array literal whose `[` is token `oi`. */
  private parseArray(oi: number): Expr {
    const ts = this.ts;
    this.advance();
    const saved = this.noRecord;
    this.noRecord = false;
    const discarding = this.discarding;
    const items: Expr[] = discarding ? NO_ITEMS : [];
    while (!this.isPunct(']')) {
      const item = this.parseExpression();
      if (this.fault !== null) return FAILED;
      if (!discarding) items.push(item);
      if (!this.eat(',')) break;
    }
    if (!this.isPunct(']')) return this.expected(']', `to close the array opened at ${ts.line[oi]}:${ts.column(oi)}`);
    const end = this.closeEnd();
    this.noRecord = saved;
    if (discarding) return SKIPPED.other;
    return { kind: 'array', items: this.fit(items), line: ts.line[oi]!, column: ts.column(oi), start: ts.start[oi]!, end };
  }

  /** A primary starting with the name at token `ti` (the current token). */
  private parseWordPrimary(ti: number): Expr {
    const ts = this.ts;
    const word = ts.text[ti]!;
    switch (word) {
      case 'if':
        return this.parseIf();
      case 'match':
        if (this.kindAt(1) !== PUNCT || this.isPunct('(', 1) || this.isPunct('[', 1) || this.isPunct('{', 1)) return this.parseMatch();
        break;
    }
    if (isReserved(word)) return this.fail(`unexpected keyword \`${word}\` where an expression was expected`);
    this.advance();
    if (this.isPunct('=>')) {
      this.advance();
      return this.lambda([word], ti);
    }
    let name = word;
    let end = ts.end[ti]!;
    while (this.isPunct('::') && this.kindAt(1) === IDENT) {
      this.advance();
      name += '::' + this.texts[this.pos]!;
      end = ts.end[this.pos]!;
      this.advance();
    }
    if (!this.noRecord && this.isPunct('{') && this.looksLikeRecord(0)) return this.parseRecord(name, ti);
    if (this.discarding) return SKIPPED.ident;
    return { kind: 'ident', name, line: ts.line[ti]!, column: ts.column(ti), start: ts.start[ti]!, end };
  }

  /** A lambda whose first token (parameter name or `(`) is token `ti`; the `=>` is already consumed. */
  private lambda(params: string[], ti: number): Expr {
    let body: Expr | Block;
    if (this.isPunct('{') && !this.looksLikeRecord(0)) body = this.parseBlock('lambda body', ti);
    else body = this.parseExpression();
    if (this.fault !== null) return FAILED;
    const ts = this.ts;
    if (this.discarding) return SKIPPED.other;
    return { kind: 'lambda', params, body, line: ts.line[ti]!, column: ts.column(ti), start: ts.start[ti]!, end: body.end };
  }

  /** A group or a parenthesized lambda parameter list; `ti` is the index of the `(` (the current token). */
  private parseParenthesized(ti: number): Expr {
    const t = this.tok(ti);
    // `(a, b) => e`: a lambda with several parameters.
    let k = 1;
    while (this.peek(k).kind === IDENT && (this.isPunct(',', k + 1) || this.isPunct(')', k + 1))) {
      k += 2;
      if (this.isPunct(')', k - 1)) break;
    }
    if (this.isPunct(')', k - 1) && this.isPunct('=>', k) && k > 1) {
      this.advance();
      const params: string[] = [];
      while (!this.isPunct(')')) {
        params.push(this.next().text);
        this.eat(',');
      }
      this.advance();
      this.advance();
      return this.lambda(params, ti);
    }
    if (this.isPunct(')', 1) && this.isPunct('=>', 2)) {
      this.advance();
      this.advance();
      this.advance();
      return this.lambda([], ti);
    }
    this.advance();
    this.enter();
    const saved = this.noRecord;
    this.noRecord = false;
    const inner = this.parseExpression();
    if (this.fault !== null) return FAILED;
    if (!this.isPunct(')')) return this.expected(')', `to close \`(\` opened at ${t.line}:${t.column}`);
    const close = this.next();
    this.noRecord = saved;
    this.depth--;
    if (this.discarding) return SKIPPED.other;
    return { kind: 'group', inner, line: t.line, column: t.column, start: t.start, end: close.end };
  }

  /** A record literal; `ti` is the index of its first token (the type name, or the `{`). Read from the token arrays. */
  private parseRecord(typeName: string | null, ti: number): Expr {
    const ts = this.ts;
    if (!this.isPunct('{')) return this.expected('{', 'to open the record');
    const oi = this.pos;
    this.advance();
    this.enter();
    const saved = this.noRecord;
    this.noRecord = false;
    const fields: { key: string; value: Expr }[] = [];
    while (!this.isPunct('}')) {
      const ki = this.pos;
      const kk = this.kinds[ki];
      if (kk !== IDENT && kk !== STRING) {
        return this.fail(`expected a field name in the record opened at ${ts.line[oi]}:${ts.column(oi)}, found ${describeToken(this.peek())}`);
      }
      this.advance();
      if (!this.eat(':') && !this.eat('=')) return this.fail(`expected \`:\` after record field ${keyText(this.tok(ki))}, found ${describeToken(this.peek())}`);
      const value = this.parseExpression();
      if (this.fault !== null) return FAILED;
      if (!this.discarding) fields.push({ key: this.texts[ki]!, value });
      if (!this.eat(',') && !this.eat(';') && !this.isPunct('}') && ts.line[this.idx(0)] === ts.line[this.pos - 1]) {
        return this.fail(`expected \`,\` or \`}\` in the record opened at ${ts.line[oi]}:${ts.column(oi)}, found ${describeToken(this.peek())}`);
      }
      if (this.kinds[this.pos] === EOF) break;
    }
    if (!this.isPunct('}')) return this.expected('}', `to close the record opened at ${ts.line[oi]}:${ts.column(oi)}`);
    const end = this.closeEnd();
    this.noRecord = saved;
    this.depth--;
    if (this.discarding) return SKIPPED.other;
    return { kind: 'record', typeName, fields: this.fit(fields), line: ts.line[ti]!, column: ts.column(ti), start: ts.start[ti]!, end };
  }

  private parseIf(): Expr {
    const first = this.pos;
    const branches: { cond: Expr; letPattern: Pattern | null; body: Block }[] = [];
    let elseBody: Block | null = null;
    for (;;) {
      const kw = this.pos; // `if`
      this.advance();
      let letPattern: Pattern | null = null;
      if (this.isWord('let')) {
        this.advance();
        letPattern = this.parsePattern();
        if (this.fault !== null) return FAILED;
        if (!this.eat('=')) return this.expected('=', 'after the pattern of `if let`');
      }
      const cond = this.parseCondition();
      if (this.fault !== null) return FAILED;
      const body = this.parseBlock('`if` block', kw);
      if (this.fault !== null) return FAILED;
      if (!this.discarding) branches.push({ cond, letPattern, body });
      if (!this.isWord('else')) break;
      const elseKw = this.pos;
      this.advance();
      if (this.isWord('if')) continue;
      elseBody = this.parseBlock('`else` block', elseKw);
      if (this.fault !== null) return FAILED;
      break;
    }
    if (this.discarding) return SKIPPED.if;
    const ts = this.ts;
    return { kind: 'if', branches: this.fit(branches), elseBody, line: ts.line[first]!, column: ts.column(first), start: ts.start[first]!, end: this.prevEnd() };
  }

  private parseMatch(): Expr {
    const kwIdx = this.pos;
    const kw = this.next();
    const subject = this.parseCondition();
    if (this.fault !== null) return FAILED;
    if (!this.isPunct('{')) return this.expected('{', 'to open the arms of `match`');
    const open = this.next();
    this.enter();
    const saved = this.noRecord;
    this.noRecord = false;
    const arms: MatchArm[] = [];
    while (!this.isPunct('}')) {
      if (this.peek().kind === EOF) break;
      const pattern = this.parsePattern();
      if (this.fault !== null) return FAILED;
      let guard: Expr | null = null;
      if (this.isWord('if')) {
        this.advance();
        guard = this.parseExpression();
        if (this.fault !== null) return FAILED;
      }
      if (!this.eat('=>')) return this.expected('=>', 'after a `match` pattern');
      let body: Expr | Block;
      if (this.isPunct('{') && !this.looksLikeRecord(0)) {
        body = this.parseBlock('`match` arm', kwIdx);
        if (this.fault !== null) return FAILED;
        this.eat(',');
      } else {
        body = this.parseExpression();
        if (this.fault !== null) return FAILED;
        if (!this.eat(',') && !this.isPunct('}')) {
          return this.fail(`expected \`,\` between \`match\` arms or \`}\` to close the \`match\` opened at ${kw.line}:${kw.column}, found ${describeToken(this.peek())}`);
        }
      }
      if (!this.discarding) arms.push({ pattern, guard, body, line: pattern.line, column: pattern.column });
    }
    if (!this.eat('}')) return this.expected('}', `to close the \`match\` opened at ${open.line}:${open.column}`);
    this.noRecord = saved;
    this.depth--;
    if (this.discarding) return SKIPPED.match;
    return { kind: 'match', subject, arms, line: kw.line, column: kw.column, start: kw.start, end: this.prevEnd() };
  }
}

// Keyword tests by length, then by comparison with literals: most names
// differ in length from every keyword and cost one comparison, where a Set
// lookup hashes and probes each time.

/** Words that start statements or clauses and are never names: `let`, `return`, `else`, `for`, `in`, `try`, `catch`. */
function isReserved(w: string): boolean {
  switch (w.length) {
    case 2:
      return w === 'in';
    case 3:
      return w === 'let' || w === 'for' || w === 'try';
    case 4:
      return w === 'else';
    case 5:
      return w === 'catch';
    case 6:
      return w === 'return';
    default:
      return false;
  }
}

/** Words parsePrimary must not treat as plain names: the reserved words, `true`, `false`, `if` and `match`. */
function isKeywordPrimary(w: string): boolean {
  switch (w.length) {
    case 2:
      return w === 'in' || w === 'if';
    case 3:
      return w === 'let' || w === 'for' || w === 'try';
    case 4:
      return w === 'else' || w === 'true';
    case 5:
      return w === 'catch' || w === 'false' || w === 'match';
    case 6:
      return w === 'return';
    default:
      return false;
  }
}

/** `=` and the compound assignments; operator texts are the lexer's literals, so these are identity checks. */
function isAssignOp(op: string): boolean {
  return op === '=' || op === '+=' || op === '-=' || op === '*=' || op === '/=' || op === '%=';
}

function byPosition(a: SyntaxDiagnostic, b: SyntaxDiagnostic): number {
  return a.line - b.line || a.column - b.column;
}

/** `allow`, `deny`, `require` or `audit` (plain comparisons: cheaper than a Set lookup for a word that is usually one of them). */
function isRuleKind(word: string): boolean {
  return word === 'allow' || word === 'deny' || word === 'require' || word === 'audit';
}

const OR_PREC = 1;
const MUL_PREC = 6;

/** Binding power of one-character binary operators, by code unit. */
const PREC1 = new Uint8Array(128);
PREC1[43] = 5; // +
PREC1[45] = 5; // -
PREC1[42] = 6; // *
PREC1[47] = 6; // /
PREC1[37] = 6; // %
PREC1[60] = 4; // <
PREC1[62] = 4; // >

/** Binding power of the binary operator at a token, 0 when it is none (character tests, no string comparisons). */
function binaryPrecedence(kind: number, text: string): number {
  if (kind === PUNCT) {
    const c = text.charCodeAt(0);
    if (text.length === 1) return c < 128 ? PREC1[c]! : 0;
    const d = text.charCodeAt(1);
    if (d === 61) return c === 61 || c === 33 ? 3 : c === 60 || c === 62 ? 4 : 0; // == != <= >=
    if (c === 124 && d === 124) return 1; // ||
    if (c === 38 && d === 38) return 2; // &&
    return 0;
  }
  return kind === IDENT && text === 'in' ? 3 : 0;
}

/**
 * An array grown by push keeps room for at least 16 elements; most syntax
 * lists hold one to four. When the whole tree stays alive until the parse
 * ends, the collector copies that slack again and again; an exact-size copy
 * of a short list costs less than carrying it.
 */
function trimmed<T>(a: T[]): T[] {
  return a.length === 0 || a.length > 16 ? a : a.slice();
}

function isOpener(text: string): boolean {
  return text === '(' || text === '[' || text === '{';
}

// Open-bracket positions while pairing; matchBrackets runs to completion without callbacks, so one array serves every call.
const bracketStack: number[] = [];

/** Pairs brackets once so recovery can jump over balanced groups in constant time. */
function matchBrackets(ts: TokenStream): Int32Array {
  const match = ts.scratch(ts.count).fill(-1, 0, ts.count);
  const stack = bracketStack;
  stack.length = 0;
  for (let i = 0; i < ts.count; i++) {
    if (ts.kind[i] !== PUNCT) continue;
    const t = ts.text[i];
    if (t === '(' || t === '[' || t === '{') stack.push(i);
    else if (t === ')' || t === ']' || t === '}') {
      const top = stack[stack.length - 1];
      const want = t === ')' ? '(' : t === ']' ? '[' : '{';
      if (top !== undefined && ts.text[top] === want) {
        stack.pop();
        match[top] = i;
        match[i] = top;
      }
    }
  }
  return match;
}

/** A key as messages show it: names in backticks, string keys as short one-line JSON. */
function keyText(t: Token): string {
  if (t.kind === IDENT) return `\`${t.text}\``;
  return JSON.stringify(t.text.length > 40 ? t.text.slice(0, 40) + '…' : t.text);
}

import { DSL_MAX_ERRORS, DSL_MAX_NESTING } from '../limits.js';
import type {
  AgentDecl,
  AgentMember,
  Block,
  CapabilitiesDecl,
  CatchClause,
  ChannelDecl,
  DataClassificationRule,
  DslFile,
  Expr,
  FunctionDecl,
  IfStatement,
  Item,
  MatchArm,
  MatchPattern,
  MemoryDecl,
  MetadataDecl,
  Param,
  Pattern,
  PolicyDecl,
  PolicyRule,
  Property,
  RecordField,
  ScheduleDecl,
  Stmt,
  TypeDecl,
  TypeRef,
  WebhookDecl,
  WithBlock,
} from './ast.js';
import { lex, type TokenList } from './lexer.js';
import { shownName } from './shown-name.js';
import { describeToken, type SyntaxDiagnostic, type Token } from './tokens.js';

// A recursive-descent parser for the Symbiont DSL. Each method below is one
// rule of Symbiont's grammar (crates/dsl/tree-sitter-symbiont/grammar.js in
// ThirdKeyAI/Symbiont), named after it and in the grammar's order, so the two
// can be read side by side. Two concerns cut across the rules and live in
// helpers at the end: error recovery (`repeatUntil`, which reports a failed
// item and skips to where the next one can start) and the nesting bound
// (`nested`, which stops hostile input before it exhausts the stack; the one
// intended difference from Symbiont's parser).
//
// Keywords are contextual, as in tree-sitter (whose keyword extraction only
// reads a word as a keyword where that keyword may appear): `agent` is a
// name inside a metadata block, and `policy` a property key in a schedule.
// Where tree-sitter resolves an ambiguity at run time (a GLR conflict), the
// rule says how it is decided here.

export interface ParseResult {
  file: DslFile;
  errors: SyntaxDiagnostic[];
}

export function parseDsl(src: string): ParseResult {
  const parser = new Parser(src);
  return { file: parser.program(), errors: parser.errors };
}

/** A rule did not match; the nearest `repeatUntil` reports it and recovers. */
class SyntaxFailure {
  constructor(
    readonly token: Token,
    readonly message: string,
  ) {}
}

/** Stops the whole parse: too deep, or too many errors. */
class ParseAbandoned {}

const TOP_LEVEL_KEYWORDS = ['metadata', 'agent', 'policy', 'type', 'function', 'schedule', 'channel', 'memory', 'webhook'];
const AGENT_ITEM_KEYWORDS = ['capabilities', 'policy', 'function', 'with'];
const POLICY_RULE_KINDS = ['allow', 'deny', 'require', 'audit'] as const;
const BUILTIN_TYPES = ['String', 'int', 'float', 'bool'];
const ASSIGNMENT_OPERATORS = ['=', '+=', '-=', '*=', '/=', '%='];
/** After a complete `if ... else { }` statement these can only continue an expression (`-`, `(`, `[` and `!` could start a new statement). */
const CONTINUING_OPERATORS = ['||', '&&', '==', '!=', '<', '>', '<=', '>=', '+', '*', '/', '%', '.', ...ASSIGNMENT_OPERATORS];
/** Words that are keywords wherever an expression may start. */
const EXPRESSION_KEYWORDS = ['if', 'not', 'true', 'false'];
/** Words that are keywords wherever a statement may start (so a block never starts `if:` and such). */
const STATEMENT_KEYWORDS = ['let', 'for', 'match', 'try', 'return', ...EXPRESSION_KEYWORDS];
/** The binary operators of each precedence level, lowest first. */
const OR_OPERATORS = ['||'];
const AND_OPERATORS = ['&&'];
const EQUALITY_OPERATORS = ['==', '!=', 'in'];
const COMPARISON_OPERATORS = ['<', '>', '<=', '>='];
const ADDITIVE_OPERATORS = ['+', '-'];
const MULTIPLICATIVE_OPERATORS = ['*', '/', '%'];
const VALUE_EXPECTED = 'a value (a string, number, duration, `true`, `false` or a name)';

type SyncPoint = (token: Token, next: Token, failed: Token) => boolean;

class Parser {
  readonly errors: SyntaxDiagnostic[] = [];
  private readonly tokens: TokenList;
  /** For each token, how many `{` are open before it (a `}` counts at its opener's level). */
  private readonly braceDepth: Int32Array;
  private pos = 0;
  private depth = 0;
  /** In an `if`, `for` or `match` head, `Name {` opens the block unless a field follows (see startsTypeLiteral). */
  private inCondition = false;
  /** An `if` read as a statement that turned out to start an expression (see ifStatementOrExpression). */
  private pendingPrimary: Expr | null = null;

  constructor(src: string) {
    this.tokens = lex(src);
    this.braceDepth = new Int32Array(this.tokens.length);
    let open = 0;
    for (let i = 0; i < this.tokens.length; i++) {
      const brace = this.tokens.kindAt(i) === 'punct' ? this.tokens.textAt(i) : '';
      if (brace === '}') open = Math.max(0, open - 1);
      this.braceDepth[i] = open;
      if (brace === '{') open++;
    }
  }

  // ---------------------------------------------------------------------
  // Top-level definition forms
  // ---------------------------------------------------------------------

  program(): DslFile {
    const items: Item[] = [];
    try {
      const startsItem: SyncPoint = (t) => t.kind === 'word' && TOP_LEVEL_KEYWORDS.includes(t.text);
      this.repeatUntil('eof', startsItem, () => items.push(this.item()));
    } catch (e) {
      // The nesting bound keeps the stack at about half of Node's default;
      // should a caller's stack be smaller still, the overflow is reported, not thrown.
      if (e instanceof RangeError) {
        const t = this.token;
        this.errors.push({ line: t.line, column: t.column, message: "nesting too deep for the parser's stack; the parser stops here" });
      } else if (!(e instanceof ParseAbandoned)) {
        throw e;
      }
    }
    return { items };
  }

  private item(): Item {
    switch (this.wordAt()) {
      case 'metadata':
        return this.metadataBlock();
      case 'agent':
        return this.agentDefinition();
      case 'policy':
        return this.policyDefinition();
      case 'type':
        return this.typeDefinition();
      case 'function':
        return this.functionDefinition();
      case 'schedule':
        return this.scheduleDefinition();
      case 'channel':
        return this.channelDefinition();
      case 'memory':
        return this.memoryDefinition();
      case 'webhook':
        return this.webhookDefinition();
      case 'with':
      case 'capabilities':
        return this.fail(`\`${shownName(this.token.text)}\` belongs inside an agent body, not at the top level`);
      default:
        return this.fail(
          `expected a top-level item (\`metadata\`, \`agent\`, \`policy\`, \`type\`, \`function\`, \`schedule\`, \`channel\`, \`memory\` or \`webhook\`), found ${describeToken(this.token)}`,
        );
    }
  }

  private metadataBlock(): MetadataDecl {
    const start = this.expectWord('metadata');
    this.expectPunct('{', 'after `metadata`');
    const pairs: Property[] = [];
    this.repeatUntil('}', startsProperty, () => pairs.push(this.metadataPair()));
    return { kind: 'metadata', pairs, ...this.closeSpan(start, 'the metadata block') };
  }

  /** `key = value` or `key: value`, where the value is a literal, an array or a record. */
  private metadataPair(): Property {
    const key = this.identifier('a metadata key');
    this.keyValueSeparator(key.text);
    const value = this.isPunct('[') ? this.array() : this.isPunct('{') ? this.record() : this.value();
    this.acceptPunct(',');
    return { key: key.text, value, line: key.line, column: key.column };
  }

  private agentDefinition(): AgentDecl {
    const start = this.expectWord('agent');
    const name = this.identifier('an agent name').text;
    let params: Param[] | null = null;
    let paramsPos: Token | null = null;
    if (this.isPunct('(')) {
      paramsPos = this.advance();
      params = this.parameterList();
    }
    const returnType = this.acceptPunct('->') ? this.type() : null;
    this.expectPunct('{', `to open agent \`${shownName(name)}\``);
    const members: AgentMember[] = [];
    const startsAgentItem: SyncPoint = (t) => t.kind === 'word' && AGENT_ITEM_KEYWORDS.includes(t.text);
    this.repeatUntil('}', startsAgentItem, () => members.push(this.agentItem(name)));
    return {
      kind: 'agent',
      name,
      params,
      paramsPos: paramsPos && { line: paramsPos.line, column: paramsPos.column },
      returnType,
      members,
      ...this.closeSpan(start, `agent \`${shownName(name)}\``),
    };
  }

  private agentItem(agent: string): AgentMember {
    switch (this.wordAt()) {
      case 'capabilities':
        return this.capabilitiesDeclaration();
      case 'policy':
        return this.policyDefinition();
      case 'function':
        return this.functionDefinition();
      case 'with':
        return this.withBlock();
      default:
        return this.fail(
          `unexpected ${describeToken(this.token)} in agent \`${shownName(agent)}\`; an agent body holds only \`capabilities = [...]\`, \`policy\`, \`function\` and \`with\` blocks`,
        );
    }
  }

  private capabilitiesDeclaration(): CapabilitiesDecl {
    const start = this.expectWord('capabilities');
    this.keyValueSeparator('capabilities');
    if (!this.isPunct('[')) this.fail(`expected an array after \`capabilities =\`, such as \`["read", "analyze"]\`, found ${describeToken(this.token)}`);
    const value = this.array();
    return { kind: 'capabilities', value, line: start.line, column: start.column };
  }

  private policyDefinition(): PolicyDecl {
    const start = this.expectWord('policy');
    const name = this.identifier('a policy name').text;
    this.expectPunct('{', `to open policy \`${shownName(name)}\``);
    const rules: PolicyRule[] = [];
    const startsRule: SyncPoint = (t, next) => t.kind === 'word' && (POLICY_RULE_KINDS as readonly string[]).includes(t.text) && isPunct(next, ':');
    this.repeatUntil('}', startsRule, () => rules.push(this.policyRule()));
    return { kind: 'policy', name, rules, ...this.closeSpan(start, `policy \`${shownName(name)}\``) };
  }

  /** `allow: expression`, optionally followed by `if condition`. */
  private policyRule(): PolicyRule {
    const start = this.token;
    const kind = POLICY_RULE_KINDS.find((k) => k === this.wordAt());
    if (!kind) return this.fail(`expected a policy rule (\`allow:\`, \`deny:\`, \`require:\` or \`audit:\`), found ${describeToken(this.token)}`);
    this.advance();
    this.expectPunct(':', `after \`${kind}\``);
    const selector = this.expression();
    let condition: Expr | null = null;
    let conditionTokens = 0;
    if (this.wordAt() === 'if') {
      this.advance();
      const first = this.pos;
      condition = this.expression();
      conditionTokens = this.pos - first;
    }
    return { kind, selector, condition, conditionTokens, line: start.line, column: start.column };
  }

  private functionDefinition(): FunctionDecl {
    const start = this.expectWord('function');
    const name = this.identifier('a function name').text;
    this.expectPunct('(', `after \`function ${shownName(name)}\``);
    const params = this.parameterList();
    const returnType = this.acceptPunct('->') ? this.type() : null;
    const body = this.block();
    return { kind: 'function', name, params, returnType, body, line: start.line, column: start.column, start: start.start, end: body.end };
  }

  private scheduleDefinition(): ScheduleDecl {
    const start = this.expectWord('schedule');
    const name = this.identifier('a schedule name').text;
    this.expectPunct('{', `to open schedule \`${shownName(name)}\``);
    const properties: Property[] = [];
    this.repeatUntil('}', startsProperty, () => properties.push(this.scheduleProperty()));
    return { kind: 'schedule', name, properties, ...this.closeSpan(start, `schedule \`${shownName(name)}\``) };
  }

  /** `key = value` or `key: value`; schedule values are literals only. */
  private scheduleProperty(): Property {
    const key = this.identifier('a schedule property');
    this.keyValueSeparator(key.text);
    if (this.isPunct('[')) this.fail('schedule values are single literals (a string, number, duration, boolean or name), not arrays');
    const value = this.value();
    this.acceptPunct(',');
    return { key: key.text, value, line: key.line, column: key.column };
  }

  private channelDefinition(): ChannelDecl {
    const start = this.expectWord('channel');
    const name = this.identifier('a channel name').text;
    this.expectPunct('{', `to open channel \`${shownName(name)}\``);
    const channel: ChannelDecl = { kind: 'channel', name, properties: [], policies: [], dataClassification: [], line: 0, column: 0, start: 0, end: 0 };
    this.repeatUntil('}', startsProperty, () => {
      // `policy` and `data_classification` are keywords here: they always open a block.
      if (this.wordAt() === 'policy') channel.policies.push(this.channelPolicyBlock());
      else if (this.wordAt() === 'data_classification') for (const rule of this.channelDataClassificationBlock()) channel.dataClassification.push(rule);
      else channel.properties.push(this.channelProperty());
    });
    return Object.assign(channel, this.closeSpan(start, `channel \`${shownName(name)}\``));
  }

  /** `key = value` or `key: value`, where the value is a literal or an array. */
  private channelProperty(): Property {
    const key = this.identifier('a channel property');
    this.keyValueSeparator(key.text);
    const value = this.isPunct('[') ? this.array() : this.value();
    this.acceptPunct(',');
    return { key: key.text, value, line: key.line, column: key.column };
  }

  /** The grammar gives channels a rule of their own with the shape of policy_definition. */
  private channelPolicyBlock(): PolicyDecl {
    return this.policyDefinition();
  }

  private channelDataClassificationBlock(): DataClassificationRule[] {
    this.expectWord('data_classification');
    this.expectPunct('{', 'after `data_classification`');
    const rules: DataClassificationRule[] = [];
    this.repeatUntil('}', startsProperty, () => rules.push(this.dataClassificationRule()));
    this.expectPunct('}', 'to close the `data_classification` block');
    return rules;
  }

  /** `category: action`, both names (`pii: redact`). */
  private dataClassificationRule(): DataClassificationRule {
    const category = this.identifier('a data category');
    this.expectPunct(':', `after \`${shownName(category.text)}\` (data classification rules are written \`category: action\`)`);
    const action = this.identifier('a classification action (a name such as `redact`, `block` or `allow`)');
    this.acceptPunct(',');
    return { category: category.text, action: action.text, line: category.line, column: category.column };
  }

  private memoryDefinition(): MemoryDecl {
    const start = this.expectWord('memory');
    const name = this.identifier('a memory name').text;
    this.expectPunct('{', `to open memory \`${shownName(name)}\``);
    const memory: MemoryDecl = { kind: 'memory', name, properties: [], search: null, line: 0, column: 0, start: 0, end: 0 };
    this.repeatUntil('}', startsSeparatorlessProperty, () => {
      if (this.wordAt() === 'search') memory.search = this.memorySearchBlock();
      else memory.properties.push(this.memoryProperty());
    });
    return Object.assign(memory, this.closeSpan(start, `memory \`${shownName(name)}\``));
  }

  private memoryProperty(): Property {
    return this.separatorlessProperty('memory');
  }

  private memorySearchBlock(): Property[] {
    this.expectWord('search');
    this.expectPunct('{', 'after `search`');
    const properties: Property[] = [];
    this.repeatUntil('}', startsSeparatorlessProperty, () => properties.push(this.memorySearchProperty()));
    this.expectPunct('}', 'to close the `search` block');
    return properties;
  }

  private memorySearchProperty(): Property {
    return this.separatorlessProperty('memory search');
  }

  private webhookDefinition(): WebhookDecl {
    const start = this.expectWord('webhook');
    const name = this.identifier('a webhook name').text;
    this.expectPunct('{', `to open webhook \`${shownName(name)}\``);
    const webhook: WebhookDecl = { kind: 'webhook', name, properties: [], filter: null, line: 0, column: 0, start: 0, end: 0 };
    this.repeatUntil('}', startsSeparatorlessProperty, () => {
      if (this.wordAt() === 'filter') webhook.filter = this.webhookFilterBlock();
      else webhook.properties.push(this.webhookProperty());
    });
    return Object.assign(webhook, this.closeSpan(start, `webhook \`${shownName(name)}\``));
  }

  private webhookProperty(): Property {
    return this.separatorlessProperty('webhook');
  }

  private webhookFilterBlock(): Property[] {
    this.expectWord('filter');
    this.expectPunct('{', 'after `filter`');
    const properties: Property[] = [];
    this.repeatUntil('}', startsSeparatorlessProperty, () => properties.push(this.webhookFilterProperty()));
    this.expectPunct('}', 'to close the `filter` block');
    return properties;
  }

  private webhookFilterProperty(): Property {
    return this.separatorlessProperty('webhook filter');
  }

  /** memory_property, memory_search_property, webhook_property and webhook_filter_property: `key value`, no separator. */
  private separatorlessProperty(block: string): Property {
    const key = this.identifier(`a ${block} property`);
    if (this.isPunct('=') || this.isPunct(':')) {
      this.fail(`${block} properties are written \`key value\` with no \`=\` or \`:\` (such as \`path "/hooks/x"\`), found ${describeToken(this.token)}`);
    }
    const value = this.value();
    this.acceptPunct(',');
    return { key: key.text, value, line: key.line, column: key.column };
  }

  private parameter(): Param {
    const name = this.identifier('a parameter name');
    this.expectPunct(':', `after parameter \`${shownName(name.text)}\` (parameters are written \`name: Type\`)`);
    return { name: name.text, type: this.type(), line: name.line, column: name.column };
  }

  /** `(` has been read: `parameter ,?` repeated, then `)`. */
  private parameterList(): Param[] {
    const params: Param[] = [];
    while (!this.isPunct(')')) {
      params.push(this.parameter());
      this.acceptPunct(',');
    }
    this.advance();
    return params;
  }

  private typeDefinition(): TypeDecl {
    const start = this.expectWord('type');
    const name = this.identifier('a type name').text;
    this.expectPunct('=', `after \`type ${shownName(name)}\``);
    const spec = this.typeSpec();
    const end = this.tokens.endAt(this.pos - 1);
    return { kind: 'type', name, ...spec, line: start.line, column: start.column, start: start.start, end };
  }

  /** A struct type `{ field: Type ... }`, or the name of another type (no arguments). */
  private typeSpec(): { alias: string | null; fields: Param[] } {
    if (this.isPunct('{')) return { alias: null, fields: this.structType() };
    const alias = this.identifier('a type name or `{` after `=`').text;
    if (this.isPunct('<')) this.fail('a type alias names one type without arguments (`type Id = String`) or lists fields (`type P = { a: int }`)');
    return { alias, fields: [] };
  }

  private structType(): Param[] {
    this.expectPunct('{', 'to open the struct type');
    const fields: Param[] = [];
    while (!this.isPunct('}')) {
      fields.push(this.field());
      this.acceptPunct(',');
    }
    this.advance();
    return fields;
  }

  private field(): Param {
    const name = this.identifier('a field name');
    this.expectPunct(':', `after field \`${shownName(name.text)}\` (fields are written \`name: Type\`)`);
    return { name: name.text, type: this.type(), line: name.line, column: name.column };
  }

  /** `String`, `int`, `float`, `bool`, `Name`, or `Name<Type, ...>`. */
  private type(): TypeRef {
    return this.nested(() => {
      const name = this.identifier('a type');
      const args: TypeRef[] = [];
      if (!BUILTIN_TYPES.includes(name.text) && this.acceptPunct('<')) {
        do args.push(this.type());
        while (this.acceptPunct(','));
        this.expectPunct('>', `to close \`${shownName(name.text)}<\``);
      }
      return { name: name.text, args, line: name.line, column: name.column };
    });
  }

  // ---------------------------------------------------------------------
  // With-block
  // ---------------------------------------------------------------------

  private withBlock(): WithBlock {
    const start = this.expectWord('with');
    const attributes: Property[] = [];
    while (!this.isPunct('{')) {
      attributes.push(this.withAttribute());
      this.acceptPunct(',');
    }
    const body = this.block();
    return { kind: 'with', attributes, body, line: start.line, column: start.column, start: start.start, end: body.end };
  }

  /** `name = value` or `name = [...]`. */
  private withAttribute(): Property {
    const name = this.identifier('a `with` attribute name or `{`');
    this.expectPunct('=', `after \`with\` attribute \`${shownName(name.text)}\` (attributes are written \`name = value\`)`);
    const value = this.isPunct('[') ? this.array() : this.value();
    return { key: name.text, value, line: name.line, column: name.column };
  }

  // ---------------------------------------------------------------------
  // Statements
  // ---------------------------------------------------------------------

  /** `{ statement* expression? }` */
  private block(): Block {
    return this.nested(() => {
      const open = this.expectPunct('{', 'to open a block');
      const statements: Stmt[] = [];
      let tail: Expr | null = null;
      const outer = this.inCondition;
      this.inCondition = false;
      this.repeatUntil(
        '}',
        () => false,
        () => {
          const result = this.statement();
          if ('tail' in result) tail = result.tail;
          else statements.push(result);
        },
      );
      this.inCondition = outer;
      const close = this.expectPunct('}', `to close the block opened at ${open.line}:${open.column}`);
      return { kind: 'block', statements, tail, line: open.line, column: open.column, start: open.start, end: close.end };
    });
  }

  /** A statement, or the block's final expression (an expression right before `}`). */
  private statement(): Stmt | { tail: Expr } {
    switch (this.wordAt()) {
      case 'let':
        return this.letStatement();
      case 'if':
        return this.ifStatementOrExpression();
      case 'for':
        return this.forStatement();
      case 'match':
        return this.matchStatement();
      case 'try':
        return this.tryStatement();
      case 'return':
        return this.returnStatement();
      default:
        return this.assignmentOrExpressionStatement();
    }
  }

  private letStatement(): Stmt {
    const start = this.expectWord('let');
    const name = this.identifier('a name after `let` (`let name = value;`)').text;
    this.expectPunct('=', `after \`let ${shownName(name)}\` (a \`let\` binds one name: \`let name = value;\`)`);
    const value = this.expression();
    this.expectPunct(';', 'to end the `let` statement');
    return { kind: 'let', name, value, line: start.line, column: start.column };
  }

  /**
   * An if_statement, or an if_expression that starts a statement (tree-sitter
   * keeps both readings): an `if` with a final `else` followed by `;`, a binary
   * operator, `.` or an assignment operator is an expression.
   */
  private ifStatementOrExpression(): Stmt | { tail: Expr } {
    const start = this.token;
    const statement = this.ifStatementChain();
    const asExpression = endsWithElseBlock(statement) ? ifExpressionOf(statement) : null;
    if (asExpression === null) return statement;
    if (this.acceptPunct(';')) return statement;
    const t = this.token;
    const continues = t.kind === 'punct' ? CONTINUING_OPERATORS.includes(t.text) : t.kind === 'word' && t.text === 'in';
    if (!continues) return statement;
    this.pendingPrimary = asExpression;
    return this.assignmentOrExpressionStatement(start);
  }

  /** `if condition block (else (if_statement | block))?`, or `if let pattern = value block ...`. */
  private ifStatementChain(): IfStatement {
    const start = this.expectWord('if');
    let letPattern: Pattern | null = null;
    if (this.wordAt() === 'let') {
      this.advance();
      letPattern = this.pattern();
      this.expectPunct('=', 'after the `if let` pattern');
    }
    const condition = this.condition();
    const then = this.block();
    let otherwise: Block | IfStatement | null = null;
    if (this.wordAt() === 'else') {
      this.advance();
      otherwise = this.wordAt() === 'if' ? this.nested(() => this.ifStatementChain()) : this.block();
    }
    return { kind: 'if', condition, letPattern, then, otherwise, ...this.spanFrom(start) };
  }

  /** `_`, a name, or `Name(pattern ,? ...)`. */
  private pattern(): Pattern {
    return this.nested(() => {
      const token = this.token;
      if (this.wordAt() === '_') {
        this.advance();
        return { kind: 'wildcard', line: token.line, column: token.column };
      }
      const name = this.identifier('a pattern (`_`, a name or `Name(...)`)').text;
      if (!this.acceptPunct('(')) return { kind: 'binding', name, line: token.line, column: token.column };
      const args: Pattern[] = [];
      while (!this.isPunct(')')) {
        args.push(this.pattern());
        this.acceptPunct(',');
      }
      this.advance();
      return { kind: 'constructor', name, args, line: token.line, column: token.column };
    });
  }

  private forStatement(): Stmt {
    const start = this.expectWord('for');
    const binding = this.identifier('one name after `for` (`for item in items { ... }`)').text;
    if (this.wordAt() !== 'in') this.fail(`expected \`in\` after \`for ${shownName(binding)}\` (a \`for\` binds one name), found ${describeToken(this.token)}`);
    this.advance();
    const iterable = this.condition();
    const body = this.block();
    return { kind: 'for', binding, iterable, body, line: start.line, column: start.column };
  }

  private matchStatement(): Stmt {
    const start = this.expectWord('match');
    const subject = this.condition();
    const open = this.expectPunct('{', 'to open the `match` arms');
    const arms: MatchArm[] = [];
    while (!this.isPunct('}')) {
      if (this.token.kind === 'eof') this.fail(`expected \`}\` to close the \`match\` opened at ${open.line}:${open.column}, found end of file`);
      arms.push(this.matchArm());
    }
    this.advance();
    return { kind: 'match', subject, arms, line: start.line, column: start.column };
  }

  /** `pattern => expression ,?` or `pattern => block ,?` */
  private matchArm(): MatchArm {
    const start = this.token;
    const pattern = this.matchPattern();
    this.expectPunct('=>', 'after the `match` pattern (patterns are literals, `_` or a name; guards are not part of the language)');
    // tree-sitter tries both a block and a record here; `{` followed by `key:` can only be a record.
    const body = this.isPunct('{') && !this.recordAhead() ? this.block() : this.expression();
    this.acceptPunct(',');
    return { pattern, body, line: start.line, column: start.column };
  }

  /** A string, number or boolean literal, `_`, or a name. */
  private matchPattern(): MatchPattern {
    const token = this.token;
    const at = { line: token.line, column: token.column };
    if (token.kind === 'string' || token.kind === 'number' || this.wordAt() === 'true' || this.wordAt() === 'false') {
      return { kind: 'literal', value: this.value(), ...at };
    }
    if (this.wordAt() === '_') {
      this.advance();
      return { kind: 'wildcard', ...at };
    }
    const name = this.identifier('a `match` pattern (a string, number or boolean literal, `_`, or a name)').text;
    return { kind: 'binding', name, ...at };
  }

  private tryStatement(): Stmt {
    const start = this.expectWord('try');
    const body = this.block();
    const catches: CatchClause[] = [];
    while (this.wordAt() === 'catch') catches.push(this.catchClause());
    return { kind: 'try', body, catches, line: start.line, column: start.column };
  }

  /** `catch (e) block` or `catch (ErrorType e) block`. */
  private catchClause(): CatchClause {
    const start = this.expectWord('catch');
    this.expectPunct('(', 'after `catch` (`catch (e) { ... }` or `catch (ErrorType e) { ... }`)');
    const first = this.identifier('a name in `catch (...)`').text;
    const second = this.token.kind === 'word' ? this.advance().text : null;
    this.expectPunct(')', 'to close `catch (` (`catch (e)` or `catch (ErrorType e)`)');
    const body = this.block();
    return second === null
      ? { typeName: null, binding: first, body, line: start.line, column: start.column }
      : { typeName: first, binding: second, body, line: start.line, column: start.column };
  }

  private returnStatement(): Stmt {
    const start = this.expectWord('return');
    const value = this.isPunct(';') ? null : this.expression();
    this.expectPunct(';', 'to end the `return` statement');
    return { kind: 'return', value, line: start.line, column: start.column };
  }

  /** assignment_statement, expression_statement, or the block's final expression. */
  private assignmentOrExpressionStatement(start: Token = this.token): Stmt | { tail: Expr } {
    const expr = this.expression();
    if (this.token.kind === 'punct' && ASSIGNMENT_OPERATORS.includes(this.token.text)) {
      if (expr.kind === 'binary' || expr.kind === 'unary') {
        this.fail(`cannot assign to an operator expression; the left side of \`${this.token.text}\` is a name, member, index or call`);
      }
      const op = this.advance().text;
      const value = this.expression();
      this.expectPunct(';', 'to end the assignment');
      return { kind: 'assign', op, target: expr, value, line: start.line, column: start.column };
    }
    if (this.isPunct('}')) return { tail: expr };
    if (!this.isPunct(';') && start.kind === 'word' && start.text === 'while') {
      // `while` is an ordinary name to the grammar, but a loop is what was meant.
      this.fail('`while` loops are not part of the language; iterate with `for x in items { ... }`', start);
    }
    this.expectPunct(';', 'to end the statement');
    return { kind: 'expr', expr, line: start.line, column: start.column };
  }

  // ---------------------------------------------------------------------
  // Expressions: the precedence ladder, lowest first
  // ---------------------------------------------------------------------

  private expression(): Expr {
    return this.nested(() => this.orExpr());
  }

  private orExpr(): Expr {
    let left = this.andExpr();
    for (let op; (op = this.binaryOperator(OR_OPERATORS));) left = this.binary(op, left, this.andExpr());
    return left;
  }

  private andExpr(): Expr {
    let left = this.equalityExpr();
    for (let op; (op = this.binaryOperator(AND_OPERATORS));) left = this.binary(op, left, this.equalityExpr());
    return left;
  }

  private equalityExpr(): Expr {
    let left = this.comparisonExpr();
    for (let op; (op = this.binaryOperator(EQUALITY_OPERATORS));) left = this.binary(op, left, this.comparisonExpr());
    return left;
  }

  private comparisonExpr(): Expr {
    let left = this.additiveExpr();
    for (let op; (op = this.binaryOperator(COMPARISON_OPERATORS));) left = this.binary(op, left, this.additiveExpr());
    return left;
  }

  private additiveExpr(): Expr {
    let left = this.multiplicativeExpr();
    for (let op; (op = this.binaryOperator(ADDITIVE_OPERATORS));) left = this.binary(op, left, this.multiplicativeExpr());
    return left;
  }

  private multiplicativeExpr(): Expr {
    let left = this.unaryExpr();
    for (let op; (op = this.binaryOperator(MULTIPLICATIVE_OPERATORS));) left = this.binary(op, left, this.unaryExpr());
    return left;
  }

  private unaryExpr(): Expr {
    const token = this.token;
    const op = this.isPunct('!') ? '!' : this.isPunct('-') ? '-' : this.wordAt() === 'not' ? 'not' : null;
    if (op === null) return this.postfixExpression();
    this.advance();
    const operand = this.nested(() => this.unaryExpr());
    return { kind: 'unary', op, operand, ...this.spanFrom(token) };
  }

  /** A primary expression or type literal followed by any number of `.name`, `(args)` and `[index]`. */
  private postfixExpression(): Expr {
    let expr = this.pendingPrimary ?? (this.startsTypeLiteral() ? this.typeLiteral() : this.primaryExpression());
    this.pendingPrimary = null;
    for (;;) {
      if (this.acceptPunct('.')) {
        const property = this.identifier('a member name after `.`').text;
        expr = { kind: 'member', object: expr, property, ...this.spanFrom(expr) };
      } else if (this.isPunct('(')) {
        expr = this.callExpression(expr);
      } else if (this.isPunct('[')) {
        expr = this.indexExpression(expr);
      } else {
        return expr;
      }
    }
  }

  /** `callee(argument, name = argument, ...)`; the comma between arguments is required. */
  private callExpression(callee: Expr): Expr {
    const args = this.freely(() =>
      this.commaSeparated('(', ')', 'call arguments', () => {
        // An argument may start with an expression, so `if`, `not`, `true` and `false` are keywords, never names.
        const t = this.token;
        const named = t.kind === 'word' && !EXPRESSION_KEYWORDS.includes(t.text) && (isPunct(this.peek(1), '=') || isPunct(this.peek(1), ':'));
        return named ? this.namedArgument() : { name: null, value: this.expression() };
      }),
    );
    return { kind: 'call', callee, args, ...this.spanFrom(callee) };
  }

  private indexExpression(object: Expr): Expr {
    this.expectPunct('[', 'to open an index');
    const index = this.freely(() => this.expression());
    this.expectPunct(']', 'to close the index');
    return { kind: 'index', object, index, ...this.spanFrom(object) };
  }

  /** `Name { field: value ... }` */
  private typeLiteral(): Expr {
    const start = this.token;
    const typeName = this.identifier('a type name').text;
    const fields = this.recordFields();
    return { kind: 'record', typeName, fields, ...this.spanFrom(start) };
  }

  private primaryExpression(): Expr {
    const token = this.token;
    if (this.wordAt() === 'if') return this.ifExpression();
    if (token.kind === 'word' && !EXPRESSION_KEYWORDS.includes(token.text) && isPunct(this.peek(1), '=>')) return this.lambda();
    if (token.kind === 'vault') {
      this.advance();
      return { kind: 'vault', path: token.text.slice('vault://'.length), ...this.spanFrom(token) };
    }
    if (this.isPunct('[')) return this.array();
    if (this.isPunct('{')) return this.record();
    if (this.acceptPunct('(')) {
      const inner = this.freely(() => this.expression());
      this.expectPunct(')', `to close the \`(\` at ${token.line}:${token.column}`);
      return { kind: 'group', inner, ...this.spanFrom(token) };
    }
    if (isValueToken(token)) return this.value();
    return this.fail(`expected an expression, found ${describeToken(token)}`);
  }

  /** `if condition block else (if_expression | block)`: the `else` is required. */
  private ifExpression(): Expr {
    const start = this.expectWord('if');
    const condition = this.condition();
    const then = this.block();
    if (this.wordAt() !== 'else') this.fail(`expected \`else\`: an \`if\` used as a value needs an \`else\` branch, found ${describeToken(this.token)}`);
    this.advance();
    const otherwise = this.wordAt() === 'if' ? this.nested(() => this.ifExpression()) : this.block();
    return { kind: 'if', condition, then, otherwise, ...this.spanFrom(start) };
  }

  /** `name => expression`: one parameter, an expression body. */
  private lambda(): Expr {
    const start = this.token;
    const param = this.identifier('a lambda parameter').text;
    this.expectPunct('=>', 'after the lambda parameter');
    const body = this.expression();
    return { kind: 'lambda', param, body, ...this.spanFrom(start) };
  }

  /** `{ field: value ... }`; commas between fields are optional. */
  private record(): Expr {
    const start = this.token;
    const fields = this.recordFields();
    return { kind: 'record', typeName: null, fields, ...this.spanFrom(start) };
  }

  // One spread per node, at the end: V8 builds `{ ...a, x, ...b }` as a slow
  // dictionary object, which made records the slowest thing to parse.
  private recordFields(): RecordField[] {
    const open = this.expectPunct('{', 'to open the record');
    const fields: RecordField[] = [];
    this.freely(() => {
      while (!this.isPunct('}')) {
        if (this.token.kind === 'eof') this.fail(`expected \`}\` to close the record opened at ${open.line}:${open.column}, found end of file`);
        fields.push(this.recordField());
        this.acceptPunct(',');
      }
    });
    this.advance();
    return fields;
  }

  /** `name: value` or `"name": value`. */
  private recordField(): RecordField {
    const key = this.token;
    if (key.kind !== 'word' && key.kind !== 'string') this.fail(`expected a record field name (a name or a string), found ${describeToken(key)}`);
    this.advance();
    this.expectPunct(':', 'after the record field name (record fields are written `name: value`)');
    const value = this.expression();
    const quotedKey = key.kind === 'string';
    return { key: quotedKey ? decodeString(key.text) : key.text, quotedKey, value, line: key.line, column: key.column };
  }

  /** `name = value` or `name: value` inside a call. */
  private namedArgument(): { name: string; value: Expr } {
    const name = this.identifier('an argument name').text;
    this.advance();
    return { name, value: this.expression() };
  }

  /** `[a, b, ...]`; the comma between items is required, a trailing comma allowed. */
  private array(): Expr & { kind: 'array' } {
    const start = this.token;
    const items = this.freely(() => this.commaSeparated('[', ']', 'array items', () => this.expression()));
    return { kind: 'array', items, ...this.spanFrom(start) };
  }

  /** A string, duration, number, boolean or name. */
  private value(): Expr {
    const token = this.token;
    if (!isValueToken(token)) return this.fail(`expected ${VALUE_EXPECTED}, found ${describeToken(token)}`);
    this.advance();
    const span = this.spanFrom(token);
    switch (token.kind) {
      case 'string':
        return { kind: 'string', value: decodeString(token.text), ...span };
      case 'duration':
        return { kind: 'duration', raw: token.text, ...span };
      case 'number':
        return { kind: 'number', value: Number(token.text.replaceAll('_', '')), raw: token.text, ...span };
      default:
        if (token.text === 'true' || token.text === 'false') return { kind: 'bool', value: token.text === 'true', ...span };
        return { kind: 'ident', name: token.text, ...span };
    }
  }

  // ---------------------------------------------------------------------
  // Helpers shared by the rules
  // ---------------------------------------------------------------------

  /** An `if`, `for` or `match` head: `Name {` there opens the block that follows, unless `name:` comes next. */
  private condition(): Expr {
    const outer = this.inCondition;
    this.inCondition = true;
    try {
      return this.expression();
    } finally {
      this.inCondition = outer;
    }
  }

  /** Inside brackets a type literal is unambiguous again. */
  private freely<T>(parse: () => T): T {
    const outer = this.inCondition;
    this.inCondition = false;
    try {
      return parse();
    } finally {
      this.inCondition = outer;
    }
  }

  /**
   * `Name {` starts a type literal, except in an `if`, `for` or `match` head,
   * where tree-sitter also tries `Name` as a value and `{` as the block: a
   * block cannot start with `name:`, so there only `Name { name: ...` (or
   * `"name": ...`) is a type literal.
   */
  private startsTypeLiteral(): boolean {
    const t = this.token;
    if (t.kind !== 'word' || EXPRESSION_KEYWORDS.includes(t.text) || !isPunct(this.peek(1), '{')) return false;
    return !this.inCondition || this.recordAhead(1);
  }

  /**
   * After the `{` at `offset` tokens ahead: `name:` or `"name":` means a record
   * rather than a block. Where a block may start, a statement keyword is a
   * keyword there too (`{ if: 1 }` is neither a record nor a block).
   */
  private recordAhead(offset = 0): boolean {
    const first = this.peek(offset + 1);
    const key = first.kind === 'string' || (first.kind === 'word' && !STATEMENT_KEYWORDS.includes(first.text));
    return key && isPunct(this.peek(offset + 2), ':');
  }

  /** The operator at the current token, consumed, when it is one of `operators`. */
  private binaryOperator(operators: string[]): string | null {
    const t = this.token;
    const isOperator = t.kind === 'punct' || (t.kind === 'word' && t.text === 'in');
    if (!isOperator || !operators.includes(t.text)) return null;
    this.advance();
    return t.text;
  }

  private binary(op: string, left: Expr, right: Expr): Expr {
    return { kind: 'binary', op, left, right, ...this.spanFrom(left) };
  }

  private commaSeparated<T>(open: string, close: string, what: string, item: () => T): T[] {
    const opened = this.expectPunct(open, `to open the ${what}`);
    const items: T[] = [];
    while (!this.isPunct(close)) {
      items.push(item());
      if (!this.acceptPunct(',') && !this.isPunct(close)) {
        this.fail(`expected \`,\` or \`${close}\` in the ${what} opened at ${opened.line}:${opened.column}, found ${describeToken(this.token)}`);
      }
    }
    this.advance();
    return items;
  }

  private keyValueSeparator(key: string): void {
    if (!this.acceptPunct('=') && !this.acceptPunct(':')) this.fail(`expected \`=\` or \`:\` after \`${shownName(key)}\`, found ${describeToken(this.token)}`);
  }

  /** The span of a declaration from its keyword to the `}` that closes it. */
  private closeSpan(start: Token, what: string): { line: number; column: number; start: number; end: number } {
    const close = this.expectPunct('}', `to close ${what} opened at ${start.line}:${start.column}`);
    return { line: start.line, column: start.column, start: start.start, end: close.end };
  }

  private spanFrom(first: { line: number; column: number; start: number }): { line: number; column: number; start: number; end: number } {
    return { line: first.line, column: first.column, start: first.start, end: this.tokens.endAt(this.pos - 1) };
  }

  // Error recovery --------------------------------------------------------

  /**
   * Parses items until `close` (`}` or end of file). An item that fails is
   * reported, then tokens are skipped to a `;`, to the `}` that closes this
   * list, or to a token where `startsItem` says the next item begins (all at
   * this list's brace level), so one mistake gives one error and the rest of
   * the file is still read.
   */
  private repeatUntil(close: '}' | 'eof', startsItem: SyncPoint, parseItem: () => void): void {
    const level = this.braceDepth[this.pos]!;
    const closed = (): boolean => this.token.kind === 'eof' || (close === '}' && this.isPunct('}'));
    while (!closed()) {
      const before = this.pos;
      try {
        parseItem();
      } catch (e) {
        if (!(e instanceof SyntaxFailure)) throw e;
        this.report(e.token, e.message);
        this.skipPast(e.token, startsItem, level);
        if (this.pos === before && !closed()) this.pos++;
      }
    }
  }

  private skipPast(failed: Token, startsItem: SyncPoint, level: number): void {
    for (; this.token.kind !== 'eof'; this.pos++) {
      const depth = this.braceDepth[this.pos]!;
      if (depth < level) return;
      if (depth > level) continue;
      const t = this.token;
      if (isPunct(t, ';')) {
        this.pos++;
        return;
      }
      // The token that failed is not where the next item starts. Tokens are made on demand, so it
      // is known by its offset: every token but the last (end of file) spans at least one character.
      if (t.start !== failed.start && startsItem(t, this.peek(1), failed)) return;
    }
  }

  private report(token: Token, message: string): void {
    if (this.errors.length >= DSL_MAX_ERRORS) {
      this.errors.push({ line: token.line, column: token.column, message: `too many syntax errors; stopped after ${DSL_MAX_ERRORS}` });
      throw new ParseAbandoned();
    }
    this.errors.push({ line: token.line, column: token.column, message: token.kind === 'invalid' ? token.text : message });
  }

  // Nesting bound -----------------------------------------------------------

  /** Every recursive rule passes through here: past DSL_MAX_NESTING levels the parse stops. */
  private nested<T>(parse: () => T): T {
    if (this.depth >= DSL_MAX_NESTING) {
      const t = this.token;
      this.errors.push({ line: t.line, column: t.column, message: `nesting deeper than ${DSL_MAX_NESTING} levels; the parser stops here` });
      throw new ParseAbandoned();
    }
    this.depth++;
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  // Tokens --------------------------------------------------------------

  /** The token at `pos`, made once per position: the parser asks for it many times before moving on. */
  private currentPos = -1;
  private currentToken: Token | undefined;

  private get token(): Token {
    if (this.currentPos !== this.pos || this.currentToken === undefined) {
      this.currentToken = this.tokens.at(this.pos);
      this.currentPos = this.pos;
    }
    return this.currentToken;
  }

  private peek(ahead: number): Token {
    return ahead === 0 ? this.token : this.tokens.at(Math.min(this.pos + ahead, this.tokens.length - 1));
  }

  private advance(): Token {
    const t = this.token;
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  /** The current token's text when it is a word, else undefined. */
  private wordAt(): string | undefined {
    return this.token.kind === 'word' ? this.token.text : undefined;
  }

  private isPunct(text: string): boolean {
    return isPunct(this.token, text);
  }

  private acceptPunct(text: string): boolean {
    if (!this.isPunct(text)) return false;
    this.pos++;
    return true;
  }

  private expectPunct(text: string, context: string): Token {
    if (!this.isPunct(text)) this.fail(`expected \`${text}\` ${context}, found ${describeToken(this.token)}`);
    return this.advance();
  }

  private expectWord(word: string): Token {
    if (this.wordAt() !== word) this.fail(`expected \`${word}\`, found ${describeToken(this.token)}`);
    return this.advance();
  }

  private identifier(what: string): Token {
    if (this.token.kind !== 'word') this.fail(`expected ${what}, found ${describeToken(this.token)}`);
    return this.advance();
  }

  private fail(message: string, token: Token = this.token): never {
    throw new SyntaxFailure(token, message);
  }
}

function isPunct(token: Token, text: string): boolean {
  return token.kind === 'punct' && token.text === text;
}

function isValueToken(token: Token): boolean {
  return token.kind === 'string' || token.kind === 'number' || token.kind === 'duration' || token.kind === 'word';
}

/** A property starts with `name =` or `name:`. */
const startsProperty: SyncPoint = (t, next) => t.kind === 'word' && (isPunct(next, '=') || isPunct(next, ':'));

/** `key value` properties have no separator to look for: a name on a later line starts the next one. */
const startsSeparatorlessProperty: SyncPoint = (t, _next, failed) => t.kind === 'word' && t.line > failed.line;

/** The if_expression an `if` statement also reads as: no `if let`, a final `else`. */
function ifExpressionOf(statement: IfStatement): Expr | null {
  if (statement.letPattern !== null || statement.otherwise === null) return null;
  let otherwise: Block | Expr;
  if (statement.otherwise.kind === 'block') {
    otherwise = statement.otherwise;
  } else {
    const inner = ifExpressionOf(statement.otherwise);
    if (inner === null) return null;
    otherwise = inner;
  }
  const { condition, then, line, column, start, end } = statement;
  return { kind: 'if', condition, then, otherwise, line, column, start, end };
}

function endsWithElseBlock(statement: IfStatement): boolean {
  let last: IfStatement = statement;
  while (last.otherwise && last.otherwise.kind === 'if') last = last.otherwise;
  return last.otherwise !== null;
}

/**
 * The value of a string token. Symbiont keeps string text as written; here
 * `\"`, `\\`, `\n`, `\t`, `\r` and `\uXXXX` are decoded, and any other escape
 * (`\d` in a pattern, `\$`) is kept as written, backslash included.
 */
function decodeString(raw: string): string {
  const body = raw.slice(1, -1);
  if (!body.includes('\\')) return body;
  return body.replace(/\\(u[0-9a-fA-F]{4}|.)/gs, (whole, escaped: string) => {
    switch (escaped[0]) {
      case '"':
        return '"';
      case '\\':
        return '\\';
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'u':
        return escaped.length === 5 ? String.fromCharCode(parseInt(escaped.slice(1), 16)) : whole;
      default:
        return whole;
    }
  });
}

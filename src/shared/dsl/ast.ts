// Syntax tree of a Symbiont DSL file, shaped after the rules of Symbiont's
// grammar.js. Every node keeps its 1-based line and column; declarations and
// expressions also keep source offsets so their text can be cut out.

export interface Pos {
  line: number;
  column: number;
}

export interface Span extends Pos {
  /** UTF-16 offset of the first character. */
  start: number;
  /** UTF-16 offset just past the last character. */
  end: number;
}

/** `String`, `int`, `float`, `bool`, `Name` or `Name<T, ...>`. */
export interface TypeRef extends Pos {
  name: string;
  args: TypeRef[];
}

export interface Param extends Pos {
  name: string;
  type: TypeRef;
}

export interface RecordField extends Pos {
  key: string;
  /** The key was written as a string (`"name": value`). */
  quotedKey: boolean;
  value: Expr;
}

export type Expr =
  | (Span & { kind: 'string'; value: string })
  | (Span & { kind: 'number'; value: number; raw: string })
  | (Span & { kind: 'bool'; value: boolean })
  | (Span & { kind: 'duration'; raw: string })
  | (Span & { kind: 'vault'; path: string })
  | (Span & { kind: 'ident'; name: string })
  | (Span & { kind: 'group'; inner: Expr })
  | (Span & { kind: 'array'; items: Expr[] })
  /** `{ a: 1 }`, or `Name { a: 1 }` (a type literal) when typeName is set. */
  | (Span & { kind: 'record'; typeName: string | null; fields: RecordField[] })
  | (Span & { kind: 'unary'; op: '!' | 'not' | '-'; operand: Expr })
  | (Span & { kind: 'binary'; op: string; left: Expr; right: Expr })
  | (Span & { kind: 'member'; object: Expr; property: string })
  | (Span & { kind: 'index'; object: Expr; index: Expr })
  | (Span & { kind: 'call'; callee: Expr; args: { name: string | null; value: Expr }[] })
  | (Span & { kind: 'lambda'; param: string; body: Expr })
  | (Span & { kind: 'if'; condition: Expr; then: Block; otherwise: Block | Expr });

/** `if let` patterns: a name, `_`, or `Name(pattern, ...)`. */
export type Pattern = (Pos & { kind: 'wildcard' }) | (Pos & { kind: 'binding'; name: string }) | (Pos & { kind: 'constructor'; name: string; args: Pattern[] });

/** `match` arm patterns: a string, number or boolean literal, `_`, or a name. */
export type MatchPattern = (Pos & { kind: 'wildcard' }) | (Pos & { kind: 'binding'; name: string }) | (Pos & { kind: 'literal'; value: Expr });

export interface MatchArm extends Pos {
  pattern: MatchPattern;
  body: Expr | Block;
}

export interface CatchClause extends Pos {
  /** `catch (APIError e)`: the type; null for `catch (e)`. */
  typeName: string | null;
  binding: string;
  body: Block;
}

export interface IfStatement extends Span {
  kind: 'if';
  condition: Expr;
  /** `if let pattern = condition`. */
  letPattern: Pattern | null;
  then: Block;
  otherwise: Block | IfStatement | null;
}

export type Stmt =
  | (Pos & { kind: 'let'; name: string; value: Expr })
  | IfStatement
  | (Pos & { kind: 'for'; binding: string; iterable: Expr; body: Block })
  | (Pos & { kind: 'match'; subject: Expr; arms: MatchArm[] })
  | (Pos & { kind: 'try'; body: Block; catches: CatchClause[] })
  | (Pos & { kind: 'return'; value: Expr | null })
  | (Pos & { kind: 'assign'; op: string; target: Expr; value: Expr })
  | (Pos & { kind: 'expr'; expr: Expr });

export interface Block extends Span {
  kind: 'block';
  statements: Stmt[];
  /** A final expression without `;`, the block's value. */
  tail: Expr | null;
}

export interface PolicyRule extends Pos {
  kind: 'allow' | 'deny' | 'require' | 'audit';
  selector: Expr;
  condition: Expr | null;
  /** Number of tokens in the condition, for the conversational check's bound. */
  conditionTokens: number;
}

export interface PolicyDecl extends Span {
  kind: 'policy';
  name: string;
  rules: PolicyRule[];
}

/** One `key value`, `key = value` or `key: value` property of a block. */
export interface Property extends Pos {
  key: string;
  value: Expr;
}

export interface WithBlock extends Span {
  kind: 'with';
  attributes: Property[];
  body: Block;
}

export interface FunctionDecl extends Span {
  kind: 'function';
  name: string;
  params: Param[];
  returnType: TypeRef | null;
  body: Block;
}

export interface CapabilitiesDecl extends Pos {
  kind: 'capabilities';
  /** Always an array (the grammar allows nothing else). */
  value: Expr & { kind: 'array' };
}

export type AgentMember = CapabilitiesDecl | PolicyDecl | FunctionDecl | WithBlock;

export interface AgentDecl extends Span {
  kind: 'agent';
  name: string;
  /** Null when the declaration has no parameter list at all. */
  params: Param[] | null;
  paramsPos: Pos | null;
  returnType: TypeRef | null;
  members: AgentMember[];
}

export interface MetadataDecl extends Span {
  kind: 'metadata';
  pairs: Property[];
}

export interface TypeDecl extends Span {
  kind: 'type';
  name: string;
  /** `type X = Y` names a type; `type X = { a: T }` lists fields. */
  alias: string | null;
  fields: Param[];
}

export interface ScheduleDecl extends Span {
  kind: 'schedule';
  name: string;
  properties: Property[];
}

export interface DataClassificationRule extends Pos {
  category: string;
  action: string;
}

export interface ChannelDecl extends Span {
  kind: 'channel';
  name: string;
  properties: Property[];
  policies: PolicyDecl[];
  dataClassification: DataClassificationRule[];
}

export interface MemoryDecl extends Span {
  kind: 'memory';
  name: string;
  properties: Property[];
  /** The `search { ... }` block, when there is one. */
  search: Property[] | null;
}

export interface WebhookDecl extends Span {
  kind: 'webhook';
  name: string;
  properties: Property[];
  /** The `filter { ... }` block, when there is one. */
  filter: Property[] | null;
}

export type Item = MetadataDecl | AgentDecl | PolicyDecl | TypeDecl | FunctionDecl | ScheduleDecl | ChannelDecl | MemoryDecl | WebhookDecl;

export interface DslFile {
  items: Item[];
}

// Syntax tree of a Symbiont DSL file. Every node keeps its 1-based line and
// column; declarations also keep source offsets so their text can be cut out.

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

export type TypeRef =
  | (Pos & { kind: 'named'; name: string; args: TypeRef[]; optional: boolean })
  | (Pos & { kind: 'array'; element: TypeRef; optional: boolean })
  | (Pos & { kind: 'record'; fields: { name: string; type: TypeRef }[] });

export interface Param extends Pos {
  name: string;
  type: TypeRef | null;
}

export type Expr =
  | (Span & { kind: 'string'; value: string })
  | (Span & { kind: 'number'; value: number; raw: string })
  | (Span & { kind: 'bool'; value: boolean })
  | (Span & { kind: 'duration'; raw: string; seconds: number })
  | (Span & { kind: 'vault'; path: string })
  | (Span & { kind: 'ident'; name: string })
  | (Span & { kind: 'group'; inner: Expr })
  | (Span & { kind: 'array'; items: Expr[] })
  | (Span & { kind: 'record'; typeName: string | null; fields: { key: string; value: Expr }[] })
  | (Span & { kind: 'unary'; op: '!' | 'not' | '-'; operand: Expr })
  | (Span & { kind: 'binary'; op: string; left: Expr; right: Expr })
  | (Span & { kind: 'member'; object: Expr; property: string })
  | (Span & { kind: 'index'; object: Expr; index: Expr })
  | (Span & { kind: 'call'; callee: Expr; args: { name: string | null; value: Expr }[] })
  | (Span & { kind: 'lambda'; params: string[]; body: Expr | Block })
  | (Span & { kind: 'if'; branches: { cond: Expr; letPattern: Pattern | null; body: Block }[]; elseBody: Block | null })
  | (Span & { kind: 'match'; subject: Expr; arms: MatchArm[] });

export type Pattern =
  | (Pos & { kind: 'wildcard' })
  | (Pos & { kind: 'literal'; value: Expr })
  | (Pos & { kind: 'binding'; name: string })
  | (Pos & { kind: 'constructor'; name: string; args: Pattern[] })
  | (Pos & { kind: 'record'; typeName: string | null; fields: { key: string; pattern: Pattern | null }[] })
  | (Pos & { kind: 'array'; items: Pattern[] })
  | (Pos & { kind: 'or'; alternatives: Pattern[] });

export interface MatchArm extends Pos {
  pattern: Pattern;
  guard: Expr | null;
  body: Expr | Block;
}

export type Stmt =
  | (Pos & { kind: 'let'; pattern: Pattern; type: TypeRef | null; value: Expr })
  | (Pos & { kind: 'assign'; op: string; target: Expr; value: Expr })
  | (Pos & { kind: 'return'; value: Expr | null })
  | (Pos & { kind: 'expr'; expr: Expr })
  | (Pos & { kind: 'for'; binding: Pattern; iterable: Expr; body: Block })
  | (Pos & { kind: 'try'; body: Block; catches: { binding: string | null; type: TypeRef | null; body: Block; line: number; column: number }[] });

export interface Block extends Span {
  kind: 'block';
  /** The statements, or an empty array when the parse did not retain bodies (see ParseOptions). */
  statements: Stmt[];
  /** A final expression without `;`, the block's value (null when bodies are not retained). */
  tail: Expr | null;
  /** How many statements the block holds, its trailing expression included; always counted. */
  count: number;
}

export interface PolicyRule extends Pos {
  kind: 'allow' | 'deny' | 'require' | 'audit';
  selector: Expr;
  condition: Expr | null;
  /** Number of tokens in the condition, for the conversational check's bound. */
  conditionTokens: number;
  /** Optional `with <expr>` tail seen on audit rules in the wild. */
  withTail: Expr | null;
}

export interface PolicyDecl extends Span {
  kind: 'policy';
  name: string;
  rules: PolicyRule[];
}

export interface Pair extends Pos {
  key: string;
  value: Expr;
}

/** `key = value` blocks (metadata, schedule, channel, memory, webhook); nested `name { ... }` sub-blocks become records. */
export interface PairBlock {
  pairs: Pair[];
  policies: PolicyDecl[];
}

export interface WithAttribute extends Pos {
  name: string;
  value: Expr;
}

export interface WithBlock extends Span {
  kind: 'with';
  attributes: WithAttribute[];
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
  value: Expr;
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
  block: PairBlock;
}

export interface TypeDecl extends Span {
  kind: 'type';
  name: string;
  type: TypeRef;
}

export interface NamedBlockDecl extends Span {
  kind: 'schedule' | 'channel' | 'memory' | 'webhook';
  name: string;
  block: PairBlock;
}

export type Item = MetadataDecl | AgentDecl | PolicyDecl | TypeDecl | FunctionDecl | NamedBlockDecl;

export interface DslFile {
  items: Item[];
}

import type { Block, Expr, Stmt } from './ast.js';

// Every string literal in an expression, at any depth and in source order.
// Symbiont's extract_capabilities (crates/dsl/src/lib.rs) collects the
// `string` nodes anywhere under a capabilities array: items, call arguments,
// record keys and values, match patterns inside an `if` value's blocks.
//
// The walk keeps its own stack: a chain such as `a.b.b.b...` or `a + a + ...`
// is a tree as deep as the chain is long, which would exhaust the call stack.

/** A node still to visit, or a record key that was written as a string. */
type Pending = Expr | Block | Stmt | { kind: 'key'; key: string };

export function stringLiteralsIn(expr: Expr): string[] {
  const out: string[] = [];
  // Children are pushed last-first so that they are visited in source order.
  const stack: Pending[] = [expr];
  const push = (...nodes: (Pending | null | undefined)[]): void => {
    for (let i = nodes.length - 1; i >= 0; i--) {
      const node = nodes[i];
      if (node) stack.push(node);
    }
  };
  const pushAll = (nodes: readonly Pending[]): void => {
    for (let i = nodes.length - 1; i >= 0; i--) stack.push(nodes[i]!);
  };
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) visit(node, out, push, pushAll);
  return out;
}

function visit(node: Pending, out: string[], push: (...nodes: (Pending | null | undefined)[]) => void, pushAll: (nodes: readonly Pending[]) => void): void {
  switch (node.kind) {
    case 'string':
      out.push(node.value);
      return;
    case 'key':
      out.push(node.key);
      return;
    case 'block':
      pushAll(node.statements);
      return push(node.tail);
    case 'group':
      return push(node.inner);
    case 'array':
      return pushAll(node.items);
    case 'record':
      for (let i = node.fields.length - 1; i >= 0; i--) {
        const field = node.fields[i]!;
        push(field.quotedKey ? { kind: 'key', key: field.key } : null, field.value);
      }
      return;
    case 'unary':
      return push(node.operand);
    case 'binary':
      return push(node.left, node.right);
    case 'member':
      return push(node.object);
    case 'index':
      return push(node.object, node.index);
    case 'call':
      pushAll(node.args.map((arg) => arg.value));
      return push(node.callee);
    case 'lambda':
      return push(node.body);
    case 'if':
      // An if expression, or an if statement (whose `otherwise` may be another if statement).
      return push(node.condition, node.then, node.otherwise);
    case 'let':
      return push(node.value);
    case 'for':
      return push(node.iterable, node.body);
    case 'match':
      for (let i = node.arms.length - 1; i >= 0; i--) {
        const arm = node.arms[i]!;
        push(arm.pattern.kind === 'literal' ? arm.pattern.value : null, arm.body);
      }
      return push(node.subject);
    case 'try':
      pushAll(node.catches.map((clause) => clause.body));
      return push(node.body);
    case 'return':
      return push(node.value);
    case 'assign':
      return push(node.target, node.value);
    case 'expr':
      return push(node.expr);
    default:
      return;
  }
}

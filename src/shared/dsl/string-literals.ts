import type { Block, Expr, Stmt } from './ast.js';

// Every string literal in an expression, at any depth and in source order.
// Symbiont's extract_capabilities (crates/dsl/src/lib.rs) collects the
// `string` nodes anywhere under a capabilities array: items, call arguments,
// record keys and values, match patterns inside an `if` value's blocks.

export function stringLiteralsIn(expr: Expr): string[] {
  const out: string[] = [];
  visitExpr(expr, out);
  return out;
}

function visitExpr(expr: Expr, out: string[]): void {
  switch (expr.kind) {
    case 'string':
      out.push(expr.value);
      return;
    case 'group':
      return visitExpr(expr.inner, out);
    case 'array':
      return expr.items.forEach((item) => visitExpr(item, out));
    case 'record':
      for (const field of expr.fields) {
        if (field.quotedKey) out.push(field.key);
        visitExpr(field.value, out);
      }
      return;
    case 'unary':
      return visitExpr(expr.operand, out);
    case 'binary':
      visitExpr(expr.left, out);
      return visitExpr(expr.right, out);
    case 'member':
      return visitExpr(expr.object, out);
    case 'index':
      visitExpr(expr.object, out);
      return visitExpr(expr.index, out);
    case 'call':
      visitExpr(expr.callee, out);
      return expr.args.forEach((arg) => visitExpr(arg.value, out));
    case 'lambda':
      return visitExpr(expr.body, out);
    case 'if':
      visitExpr(expr.condition, out);
      visitBlock(expr.then, out);
      return expr.otherwise.kind === 'block' ? visitBlock(expr.otherwise, out) : visitExpr(expr.otherwise, out);
    default:
      return;
  }
}

function visitBlock(block: Block, out: string[]): void {
  block.statements.forEach((statement) => visitStmt(statement, out));
  if (block.tail) visitExpr(block.tail, out);
}

function visitStmt(statement: Stmt, out: string[]): void {
  switch (statement.kind) {
    case 'let':
      return visitExpr(statement.value, out);
    case 'if':
      visitExpr(statement.condition, out);
      visitBlock(statement.then, out);
      if (statement.otherwise?.kind === 'block') visitBlock(statement.otherwise, out);
      else if (statement.otherwise) visitStmt(statement.otherwise, out);
      return;
    case 'for':
      visitExpr(statement.iterable, out);
      return visitBlock(statement.body, out);
    case 'match':
      visitExpr(statement.subject, out);
      for (const arm of statement.arms) {
        if (arm.pattern.kind === 'literal') visitExpr(arm.pattern.value, out);
        if (arm.body.kind === 'block') visitBlock(arm.body, out);
        else visitExpr(arm.body, out);
      }
      return;
    case 'try':
      visitBlock(statement.body, out);
      return statement.catches.forEach((clause) => visitBlock(clause.body, out));
    case 'return':
      if (statement.value) visitExpr(statement.value, out);
      return;
    case 'assign':
      visitExpr(statement.target, out);
      return visitExpr(statement.value, out);
    case 'expr':
      return visitExpr(statement.expr, out);
  }
}

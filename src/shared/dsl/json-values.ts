import type { Expr, TypeRef } from './ast.js';

// Renders DSL literals and types as JSON-able values for reports. Recursion
// only follows arrays, records and type arguments, whose depth the parser
// already bounds; anything else is shown as its exact source text.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Sets a key without letting `__proto__` or similar names touch the prototype. */
export function defineKey(target: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  // Only `__proto__` is an accessor on Object.prototype; every other key of a
  // plain object made here is an own data property, so a store is the same.
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

export function exprToJson(expr: Expr, src: string): JsonValue {
  switch (expr.kind) {
    case 'string':
      return expr.value;
    case 'number':
      return Number.isFinite(expr.value) ? expr.value : expr.raw;
    case 'bool':
      return expr.value;
    case 'duration':
      return expr.raw;
    case 'vault':
      return `vault://${expr.path}`;
    case 'ident':
      return expr.name;
    case 'group':
      return exprToJson(expr.inner, src);
    case 'array':
      return expr.items.map((item) => exprToJson(item, src));
    case 'record': {
      const out: { [key: string]: JsonValue } = {};
      for (const field of expr.fields) defineKey(out, field.key, exprToJson(field.value, src));
      return out;
    }
    case 'unary':
      if (expr.op === '-' && expr.operand.kind === 'number') return -expr.operand.value;
      return src.slice(expr.start, expr.end);
    default:
      return src.slice(expr.start, expr.end);
  }
}

export function typeToText(type: TypeRef): string {
  return type.args.length > 0 ? `${type.name}<${type.args.map(typeToText).join(', ')}>` : type.name;
}

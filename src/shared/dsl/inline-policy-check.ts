import { INLINE_POLICY_MAX_CONDITION_TOKENS, INLINE_POLICY_MAX_NESTING, INLINE_POLICY_MAX_RULES } from '../limits.js';
import type { Expr, PolicyDecl } from './ast.js';
import { shownName } from './shown-name.js';

// Validates the inline policy subset the text-response route accepts
// (docs/writing-agents.md, "Inline policies the route accepts"). Returns the first problem as a
// one-line message, or null when every policy is supported.

const CONDITION_ROOTS = new Set(['principal', 'invocation', 'context']);
const COMPARISONS = new Set(['<', '>', '<=', '>=']);
const ARITHMETIC = new Set(['+', '-', '*', '/', '%']);

export function checkInlinePolicies(policies: readonly PolicyDecl[]): string | null {
  const seen = new Map<string, PolicyDecl>();
  let total = 0;
  for (const policy of policies) {
    const first = seen.get(policy.name);
    if (first) {
      return `duplicate policy name \`${shownName(policy.name)}\` at ${policy.line}:${policy.column} (first declared at ${first.line}:${first.column}); policy names must be unique`;
    }
    seen.set(policy.name, policy);
    if (policy.rules.length === 0)
      return `policy \`${shownName(policy.name)}\` at ${policy.line}:${policy.column} is empty; a policy block needs at least one \`allow:\` or \`deny:\` rule`;
    total += policy.rules.length;
    if (total > INLINE_POLICY_MAX_RULES) {
      return `policy \`${shownName(policy.name)}\` at ${policy.line}:${policy.column} brings the selected definition past ${INLINE_POLICY_MAX_RULES} policy rules; at most ${INLINE_POLICY_MAX_RULES} are supported`;
    }
    for (const rule of policy.rules) {
      const where = `policy \`${shownName(policy.name)}\` has`;
      if (rule.kind !== 'allow' && rule.kind !== 'deny') {
        return `${where} ${rule.kind === 'audit' ? 'an' : 'a'} \`${rule.kind}:\` rule at ${rule.line}:${rule.column}; only \`allow:\` and \`deny:\` rules are supported`;
      }
      if (!isSupportedSelector(rule.selector)) {
        return `${where} an unsupported selector in its \`${rule.kind}:\` rule at ${rule.selector.line}:${rule.selector.column}; a selector is a string, a non-empty array of strings, or a boolean`;
      }
      if (rule.condition) {
        if (rule.conditionTokens > INLINE_POLICY_MAX_CONDITION_TOKENS) {
          return `${where} a condition of ${rule.conditionTokens} tokens at ${rule.condition.line}:${rule.condition.column}; at most ${INLINE_POLICY_MAX_CONDITION_TOKENS} tokens are supported`;
        }
        const problem = conditionProblem(rule.condition);
        if (problem)
          return `${where} ${problem}; conditions may use literals, dot access rooted at \`principal\`, \`invocation\` or \`context\`, ==, !=, integer comparisons, \`in [literals]\`, !, not, &&, || and parentheses`;
      }
    }
  }
  return null;
}

function isSupportedSelector(e: Expr): boolean {
  if (e.kind === 'string' || e.kind === 'bool') return true;
  if (e.kind === 'array') return e.items.length > 0 && e.items.every((item) => item.kind === 'string');
  return false;
}

function isIntegerLiteral(e: Expr): boolean {
  if (e.kind === 'unary' && e.op === '-') e = e.operand;
  return e.kind === 'number' && Number.isSafeInteger(e.value) && !e.raw.includes('.');
}

function isFlatLiteral(e: Expr): boolean {
  return e.kind === 'string' || e.kind === 'bool' || isIntegerLiteral(e);
}

/** Dot access such as `principal.team.name`, rooted at one of the allowed names. */
function isRootedPath(e: Expr): boolean {
  while (e.kind === 'member') e = e.object;
  return e.kind === 'ident' && CONDITION_ROOTS.has(e.name);
}

/** Walks the condition with an explicit stack; returns the first unsupported construct. */
function conditionProblem(root: Expr): string | null {
  // `ordered` marks an operand of <, >, <= or >=, which must be an integer.
  const stack: { e: Expr; depth: number; ordered?: string }[] = [{ e: root, depth: 1 }];
  while (stack.length > 0) {
    const { e, depth, ordered } = stack.pop()!;
    const at = `${e.line}:${e.column}`;
    if (ordered && (e.kind === 'string' || e.kind === 'bool' || e.kind === 'array')) {
      return `a \`${ordered}\` comparison of something other than integers at ${at}`;
    }
    if (depth > INLINE_POLICY_MAX_NESTING) {
      return `a condition nested deeper than ${INLINE_POLICY_MAX_NESTING} levels at ${at}`;
    }
    switch (e.kind) {
      case 'string':
      case 'bool':
        break;
      case 'number':
        if (!isIntegerLiteral(e)) return `a non-integer number in a condition at ${at}`;
        break;
      case 'ident':
      case 'member': {
        let base: Expr = e;
        while (base.kind === 'member') base = base.object;
        if (base.kind === 'call') return `a function call in a condition at ${base.line}:${base.column}`;
        if (base.kind === 'index') return `indexing in a condition at ${base.line}:${base.column}`;
        if (!isRootedPath(e)) return `a name not rooted at \`principal\`, \`invocation\` or \`context\` in a condition at ${at}`;
        break;
      }
      case 'group':
        stack.push({ e: e.inner, depth: depth + 1 });
        break;
      case 'unary':
        if (e.op === '-') {
          if (!isIntegerLiteral(e)) return `arithmetic (unary \`-\`) in a condition at ${at}`;
          break;
        }
        stack.push({ e: e.operand, depth: depth + 1 });
        break;
      case 'binary':
        if (ARITHMETIC.has(e.op)) return `arithmetic (\`${e.op}\`) in a condition at ${at}`;
        if (e.op === 'in') {
          if (e.right.kind !== 'array' || !e.right.items.every(isFlatLiteral)) {
            return `an \`in\` whose right side is not a flat array of literals at ${e.right.line}:${e.right.column}`;
          }
          stack.push({ e: e.left, depth: depth + 1 });
          break;
        }
        if (COMPARISONS.has(e.op)) {
          stack.push({ e: e.left, depth: depth + 1, ordered: e.op }, { e: e.right, depth: depth + 1, ordered: e.op });
          break;
        }
        // A chain such as `a || b || c` is one level, not one per operator.
        stack.push(
          { e: e.left, depth: e.left.kind === 'binary' && e.left.op === e.op ? depth : depth + 1 },
          { e: e.right, depth: e.right.kind === 'binary' && e.right.op === e.op ? depth : depth + 1 },
        );
        break;
      case 'call':
        return `a function call in a condition at ${at}`;
      case 'index':
        return `indexing in a condition at ${at}`;
      case 'array':
        return `an array outside \`in\` in a condition at ${at}`;
      default:
        return `an unsupported ${e.kind} expression in a condition at ${at}`;
    }
  }
  return null;
}

// Hostile input: random bytes, mutated corpus files, deep nesting, limits.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { definitionRefusalText, selectConversationalDefinition } from '../../src/shared/dsl/conversational-definition.js';
import { parseDslBytes, parseDslReport, type ParseReport } from '../../src/shared/dsl/parse-report.js';
import { DSL_FILE_MAX_BYTES, DSL_MAX_ERRORS } from '../../src/shared/limits.js';
import { repoRoot } from '../support/server-entry.js';

const dir = join(repoRoot, 'test', 'fixtures', 'dsl');
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.symbi') || f.endsWith('.dsl'))
  .sort()
  .map((f) => readFileSync(join(dir, f), 'utf8'));

function assertWellFormed(report: ParseReport, text: string): void {
  assert.equal(typeof report.has_errors, 'boolean');
  assert.equal(report.has_errors, report.errors.length > 0);
  assert.ok(report.errors.length <= DSL_MAX_ERRORS + 1);
  const lines = text.split('\n').length;
  for (const e of report.errors) {
    assert.ok(Number.isInteger(e.line) && e.line >= 1 && e.line <= lines, `line ${e.line} of ${lines}`);
    assert.ok(Number.isInteger(e.column) && e.column >= 1);
    assert.ok(!/[\r\n]/.test(e.message));
  }
  JSON.stringify(report);
}

const TOKENS = [
  'agent',
  'policy',
  'metadata',
  'with',
  'function',
  'let',
  'if',
  'else',
  'match',
  'for',
  'in',
  'try',
  'catch',
  'return',
  'allow:',
  'deny:',
  '{',
  '}',
  '(',
  ')',
  '[',
  ']',
  ',',
  ';',
  ':',
  '=',
  '==',
  '=>',
  '->',
  '.',
  '"s"',
  '"',
  '30s',
  '5.minutes',
  '1_0',
  'vault://a/b',
  'x',
  '_',
  '#',
  '//',
  '/*',
  '\n',
  ' ',
  '!',
  'not',
  '&&',
  '||',
  '+',
  '-',
  '<',
  '>',
  'capabilities',
  'schedule',
  '\\',
];

test('random byte strings never throw', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
      const report = parseDslBytes(bytes, '<random>');
      assert.equal(typeof report.has_errors, 'boolean');
      JSON.stringify(report);
    }),
    { numRuns: 400 },
  );
});

test('random token soups never throw and report sane positions', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 300 }), (parts) => {
      const text = parts.join(' ');
      assertWellFormed(parseDslReport(text, '<soup>'), text);
      selectConversationalDefinition([{ stem: 'x', file: 'agents/x.symbi', text }], 'x');
    }),
    { numRuns: 400 },
  );
});

test('random mutations of corpus files never throw', () => {
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 20 }) }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.constantFrom(...TOKENS) }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.string({ maxLength: 8 }) }),
    fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 60 }) }),
  );
  fc.assert(
    fc.property(fc.nat({ max: corpus.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 6 }), (index, edits) => {
      let text = corpus[index]!;
      for (const m of edits) {
        const at = text.length === 0 ? 0 : m.at % (text.length + 1);
        if (m.kind === 'delete') text = text.slice(0, at) + text.slice(at + m.len);
        else if (m.kind === 'insert') text = text.slice(0, at) + m.text + text.slice(at);
        else text = text.slice(0, at) + text.slice(at, at + m.len) + text.slice(at);
      }
      assertWellFormed(parseDslReport(text, '<mutant>'), text);
      selectConversationalDefinition([{ stem: 'm', file: 'agents/m.symbi', text }], 'm');
    }),
    { numRuns: 500 },
  );
});

const deep = 10_000;
const nestings: [string, string][] = [
  ['parentheses', `function f() { let x = ${'('.repeat(deep)}1${')'.repeat(deep)}; }`],
  ['unclosed parentheses', `function f() { let x = ${'('.repeat(deep)}`],
  ['if blocks', `function f() { ${'if a { '.repeat(deep)}${'} '.repeat(deep)}}`],
  ['arrays', `metadata { a = ${'['.repeat(deep)}${']'.repeat(deep)} }`],
  ['records', `metadata { a = ${'{ a: '.repeat(deep)}1${' }'.repeat(deep)} }`],
  ['type literals', `function f() { let x = ${'T { a: '.repeat(deep)}1${' }'.repeat(deep)}; }`],
  ['unary operators', `function f() { let x = ${'!'.repeat(deep)}y; }`],
  ['negations', `function f() { let x = ${'- '.repeat(deep)}1; }`],
  ['lambdas', `function f() { let x = ${'a => '.repeat(deep)}1; }`],
  ['generic types', `function f(a: ${'Array<'.repeat(deep)}int${'>'.repeat(deep)}) {}`],
  ['patterns', `function f() { if let ${'Some('.repeat(deep)}y${')'.repeat(deep)} = x {} }`],
  ['match statements', `function f() { ${'match x { _ => { '.repeat(deep)}${'} }'.repeat(deep)} }`],
  ['else-if chains', `function f() { if a {} ${'else if a {} '.repeat(deep)}}`],
];

for (const [what, text] of nestings) {
  test(`10,000 nested ${what} give a nesting error, not a stack overflow`, () => {
    const report = parseDslReport(text, '<deep>');
    assert.ok(report.has_errors);
    assert.ok(
      report.errors.some((e) => /nesting deeper than 256 levels/.test(e.message)),
      JSON.stringify(report.errors.slice(0, 3)),
    );
    assertWellFormed(report, text);
    const s = selectConversationalDefinition([{ stem: 'd', file: 'agents/d.symbi', text }], 'd');
    assert.ok(!s.ok && /syntax error/.test(definitionRefusalText(s.refusal)));
  });
}

test('10,000 bare braces in a block are an error, not a stack overflow', () => {
  const text = `function f() { ${'{'.repeat(deep)}${'}'.repeat(deep)} }`;
  const report = parseDslReport(text, '<braces>');
  assert.ok(report.has_errors);
  assertWellFormed(report, text);
});

test('moderate nesting within the bound parses cleanly', () => {
  const text = `function f() { let x = ${'('.repeat(100)}1${')'.repeat(100)}; ${'if a { '.repeat(100)}${'} '.repeat(100)}}`;
  const report = parseDslReport(text, '<ok>');
  assert.deepEqual(report.errors, []);
});

test('invalid UTF-8 is refused before parsing with one error at 1:1', () => {
  for (const bytes of [[0xff], [0x61, 0x67, 0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
    const report = parseDslBytes(Uint8Array.from(bytes), 'bad.symbi');
    assert.equal(report.has_errors, true);
    assert.deepEqual(report.errors, [{ line: 1, column: 1, message: 'the file is not valid UTF-8; DSL files must be UTF-8 text' }]);
    assert.deepEqual(report.agents, []);
  }
});

test('text over 1 MiB is refused; exactly 1 MiB is parsed', () => {
  const exact = '#'.padEnd(DSL_FILE_MAX_BYTES - 1, 'x') + '\n';
  assert.equal(Buffer.byteLength(exact), DSL_FILE_MAX_BYTES);
  assert.equal(parseDslReport(exact, 'big').has_errors, false);
  const over = exact + ' ';
  const report = parseDslReport(over, 'big');
  assert.equal(report.has_errors, true);
  assert.match(report.errors[0]!.message, /1048577 bytes; the limit is 1048576 bytes/);
  assert.equal(parseDslBytes(Buffer.from(over), 'big').has_errors, true);
});

test('unterminated strings and comment-looking text at end of file are errors with positions', () => {
  const s = parseDslReport('metadata {\n  a = "open', 's');
  assert.deepEqual(s.errors[0], { line: 2, column: 7, message: 'unterminated string: no closing `"` before end of file' });
  const c = parseDslReport('agent a {}\n  /* dangling', 'c');
  assert.equal(c.errors[0]!.line, 2);
  assert.equal(c.errors[0]!.column, 3);
  assert.match(c.errors[0]!.message, /block comments \(`\/\* \*\/`\) are not part of the language/);
  const e = parseDslReport('metadata { a = "x\\', 'e');
  assert.ok(e.has_errors);
});

test('error reporting stops at the error budget', () => {
  const text = 'agent a { $ }\n'.repeat(5000);
  const report = parseDslReport(text, 'many');
  assert.equal(report.errors.length, DSL_MAX_ERRORS + 1);
  assert.match(report.errors.at(-1)!.message, /too many syntax errors/);
});

test('hostile keys do not touch object prototypes', () => {
  const report = parseDslReport('metadata { __proto__ = { polluted: true } constructor = 1 }\nagent a { with __proto__ = 1 {} }', 'p');
  assert.equal(report.has_errors, false);
  assert.deepEqual(Object.keys(report.metadata), ['__proto__', 'constructor']);
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  assert.equal(Object.getPrototypeOf(report.metadata), Object.prototype);
  assert.equal(JSON.parse(JSON.stringify(report)).metadata.__proto__.polluted, true);
});

test('recovery reports errors in several items of one file', () => {
  const text = 'agent a {\n  capabilities = [\n}\nagent b {\n  nonsense\n}\nagent c {}\n';
  const report = parseDslReport(text, 'r');
  assert.ok(report.errors.length >= 2, JSON.stringify(report.errors));
  assert.deepEqual(
    report.agents.map((a) => a.name),
    ['a', 'b', 'c'],
  );
  assert.deepEqual(
    report.errors.find((e) => e.line === 5),
    {
      line: 5,
      column: 3,
      message: 'unexpected `nonsense` in agent `b`; an agent body holds only `capabilities = [...]`, `policy`, `function` and `with` blocks',
    },
  );
});

// Texts generated from the grammar's rules, with the optional commas and
// separators chosen at random: every one must parse without errors.
const name = fc.constantFrom('a', 'data', 'agent', 'policy', 'type', 'x_1', 'Value', 'in_out');
const str = fc.constantFrom('"s"', '"with \\"escape\\" \\d"', '""', '"#not a comment"');
const num = fc.constantFrom('0', '42', '1_000', '3.14');
const dur = fc.constantFrom('30s', '5m', '2h', '7d', '1w', '6months', '1y', '10.seconds', '5.minutes', '2.hours');
// Channel bodies read `policy` as a keyword; other property keys are names.
const key = fc.constantFrom('a', 'data', 'agent', 'type', 'x_1', 'Value', 'in_out');
const value = fc.oneof(str, num, dur, fc.constantFrom('true', 'false'), name);
const comma = fc.constantFrom('', ',');
const sep = fc.constantFrom(' = ', ': ');
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    value,
    fc.constantFrom('vault://a/b.c', 'x.y.z', 'f()', 'a[0]'),
    fc.tuple(tie('e'), fc.constantFrom('||', '&&', '==', '!=', 'in', '<', '>=', '+', '-', '*', '%'), tie('e')).map(([l, op, r]) => `${l} ${op} ${r}`),
    fc.tuple(fc.constantFrom('!', 'not ', '-'), tie('e')).map(([op, e]) => `${op}${e}`),
    tie('e').map((e) => `(${e})`),
    fc.array(tie('e'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
    fc
      .tuple(name, fc.array(fc.tuple(name, tie('e'), comma), { maxLength: 3 }))
      .map(([t, fs]) => `${t} { ${fs.map(([k, v, c]) => `${k}: ${v}${c}`).join(' ')} }`),
    fc.tuple(name, tie('e')).map(([p, e]) => `${p} => ${e}`),
    fc.tuple(name, fc.array(tie('e'), { maxLength: 2 })).map(([f, args]) => `${f}(${args.join(', ')})`),
    // A type literal right in an `if` head is read as the block (see docs/dsl.md).
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([c, a, b]) => `if (${c}) { ${a} } else { ${b} }`),
  ),
})).e;
const statement = fc.oneof(
  fc.tuple(name, expr).map(([n, e]) => `let ${n} = ${e};`),
  fc.tuple(name, fc.constantFrom('=', '+=', '%='), expr).map(([n, op, e]) => `${n}.f ${op} ${e};`),
  expr.map((e) => `return ${e};`),
  fc.constant('return;'),
  fc.tuple(name, expr).map(([n, e]) => `for ${n} in (${e}) { go(); }`),
  fc
    .tuple(
      expr.map((e) => `(${e})`),
      fc.array(fc.tuple(fc.oneof(str, num, name, fc.constant('_')), expr, comma), { maxLength: 3 }),
    )
    .map(([s, arms]) => `match ${s} { ${arms.map(([p, e, c]) => `${p} => ${e}${c}`).join(' ')} }`),
  fc.tuple(name, fc.option(name)).map(([a, b]) => `try { a(); } catch (${b === null ? a : `${a} ${b}`}) { b(); }`),
  fc.tuple(name, expr).map(([n, e]) => `if let ${n}(x, _ y) = (${e}) { } else if (${e}) { } else { }`),
);
const type = fc.constantFrom('String', 'int', 'float', 'bool', 'Thing', 'Map<String, int>', 'Array<Result<T, E>>');
const params = fc.array(fc.tuple(name, type, comma), { maxLength: 3 }).map((ps) => ps.map(([n, t, c]) => `${n}: ${t}${c}`).join(' '));
const rule = fc
  .tuple(fc.constantFrom('allow', 'deny', 'require', 'audit'), expr, fc.option(expr))
  .map(([k, s, c]) => `${k}: ${s}${c === null ? '' : ` if ${c}`}`);
const policy = fc.tuple(name, fc.array(rule, { maxLength: 3 })).map(([n, rs]) => `policy ${n} {\n${rs.join('\n')}\n}`);
const fn = fc
  .tuple(name, params, fc.option(type), fc.array(statement, { maxLength: 4 }), fc.option(expr))
  .map(([n, p, t, ss, tail]) => `function ${n}(${p})${t === null ? '' : ` -> ${t}`} {\n${ss.join('\n')}\n${tail ?? ''}\n}`);
const item = fc.oneof(
  fc
    .array(
      fc.tuple(
        name,
        sep,
        fc.oneof(
          value,
          expr.map((e) => `[${e}]`),
          fc.constant('{ a: 1 "b": [2] }'),
        ),
        comma,
      ),
      { maxLength: 4 },
    )
    .map((ps) => `metadata {\n${ps.map(([k, s, v, c]) => `${k}${s}${v}${c}`).join('\n')}\n}`),
  fc
    .tuple(
      name,
      fc.option(params),
      fc.option(type),
      fc.array(
        fc.oneof(
          policy,
          fn,
          fc.constant('capabilities: ["a", b]'),
          fc.tuple(name, value, comma).map(([n, v, c]) => `with ${n} = ${v}${c} t = [1] { go(); }`),
        ),
        { maxLength: 3 },
      ),
    )
    .map(([n, p, t, members]) => `agent ${n}${p === null ? '' : `(${p})`}${t === null ? '' : ` -> ${t}`} {\n${members.join('\n')}\n}`),
  policy,
  fn,
  fc
    .tuple(name, fc.array(fc.tuple(name, type, comma), { maxLength: 3 }))
    .map(([n, fs]) => `type ${n} = { ${fs.map(([f, t, c]) => `${f}: ${t}${c}`).join('\n')} }`),
  fc
    .tuple(name, fc.array(fc.tuple(name, sep, value, comma), { maxLength: 4 }))
    .map(([n, ps]) => `schedule ${n} { ${ps.map(([k, s, v, c]) => `${k}${s}${v}${c}`).join(' ')} }`),
  fc
    .tuple(name, fc.array(fc.tuple(key, sep, fc.oneof(value, fc.constant('["#a", "#b"]')), comma), { maxLength: 3 }))
    .map(
      ([n, ps]) =>
        `channel ${n} { ${ps.map(([k, s, v, c]) => `${k}${s}${v}${c}`).join(' ')} data_classification { pii: redact, key: block } policy p { deny: "x" } }`,
    ),
  fc
    .tuple(name, fc.array(fc.tuple(name, value, comma), { maxLength: 3 }))
    .map(([n, ps]) => `memory ${n} { ${ps.map(([k, v, c]) => `${k} ${v}${c}`).join(' ')} search { vector_weight 0.5 } }`),
  fc
    .tuple(name, fc.array(fc.tuple(name, value, comma), { maxLength: 3 }))
    .map(([n, ps]) => `webhook ${n} { ${ps.map(([k, v, c]) => `${k} ${v}${c}`).join(' ')} filter { equals "x" } }`),
);

test('texts generated from the grammar parse without errors', () => {
  fc.assert(
    fc.property(fc.array(item, { maxLength: 4 }), fc.constantFrom('\n', '\n// comment\n', '\n# comment\n'), (items, between) => {
      const text = items.join(between);
      const report = parseDslReport(text, '<generated>');
      assert.deepEqual(report.errors, [], text);
    }),
    { numRuns: 300 },
  );
});

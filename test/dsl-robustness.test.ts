// Hostile input: random bytes, mutated corpus files, deep nesting, limits.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { selectConversationalDefinition } from '../src/shared/dsl/conversational-definition.js';
import { parseDslBytes, parseDslReport, type ParseReport } from '../src/shared/dsl/parse-report.js';
import { DSL_FILE_MAX_BYTES, DSL_MAX_ERRORS } from '../src/shared/limits.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'dsl');
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

const TOKENS = ['agent', 'policy', 'metadata', 'with', 'function', 'let', 'if', 'else', 'match', 'for', 'in', 'try', 'catch', 'return',
  'allow:', 'deny:', '{', '}', '(', ')', '[', ']', ',', ';', ':', '=', '==', '=>', '->', '.', '"s"', '"', '30s', '5.minutes', '1_0',
  'vault://a/b', 'x', '_', '#', '//', '/*', '\n', ' ', '!', 'not', '&&', '||', '+', '-', '<', '>', 'capabilities', 'schedule', '\\'];

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
    assert.ok(report.errors.some((e) => /nesting deeper than 256 levels/.test(e.message)), JSON.stringify(report.errors.slice(0, 3)));
    assertWellFormed(report, text);
    const s = selectConversationalDefinition([{ stem: 'd', file: 'agents/d.symbi', text }], 'd');
    assert.ok(!s.ok && /syntax error/.test(s.message));
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
  assert.deepEqual(report.agents.map((a) => a.name), ['a', 'b', 'c']);
  assert.deepEqual(report.errors.find((e) => e.line === 5), {
    line: 5,
    column: 3,
    message: 'unexpected `nonsense` in agent `b`; an agent body holds only `capabilities = [...]`, `policy`, `function` and `with` blocks',
  });
});

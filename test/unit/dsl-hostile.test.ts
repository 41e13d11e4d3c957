// Hostile DSL text in process (issue 26): every row of the table, and
// a fuzz run of amplified grammar shapes and mutated Symbiont samples. Each
// text must give a report whose diagnostics are bounded, with no exception
// and no stack overflow; time is only bounded generously per KiB (speed
// targets live in scripts/bench/bench-dsl-hostile.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { conversationalVerdict, definitionRefusalText } from '../../src/shared/dsl/conversational-definition.js';
import { buildReport, parseDslReport, type ParseReport } from '../../src/shared/dsl/parse-report.js';
import { parseDsl } from '../../src/shared/dsl/parser.js';
import { DSL_FILE_MAX_BYTES, DSL_MAX_ERRORS } from '../../src/shared/limits.js';
import { AMPLIFIED_CONTEXTS as contexts, AMPLIFIED_UNITS as units, hostileInputs } from '../support/hostile-dsl-inputs.js';
import { repoRoot } from '../support/server-entry.js';

/** Generous: a slow, shared CI machine still stays far inside it; a quadratic step does not. */
const MS_PER_KIB = 100;
const MESSAGE_MAX_CHARS = 512;

/**
 * Reports of the texts the rows parse: a later test on the same text reads the row's
 * report instead of parsing the text again (parseDslReport depends on the text and its source only,
 * and the later tests look at nothing the source name changes). A megabyte-class parse costs about a second.
 */
const rowReports = new Map<string, ParseReport>();

/** parseDslReport(text, source), or the report a row already made of the same text. */
function reportOf(text: string, source: string): ParseReport {
  return rowReports.get(text) ?? parseDslReport(text, source);
}

/**
 * What each reader of a file makes of `text`: the parse_dsl report, and the conversational check that
 * list_agents' summary and invoke_agent's selection both run (examine in conversational-definition.ts).
 * One parse serves both, as it does for a startup summary: parsing is most of the time here, and each
 * entry point's own parse of hostile text is run through the server in dsl-hostile-server.test.ts.
 */
function analyse(text: string): { report: ParseReport; verdicts: string[]; ms: number } {
  const started = performance.now();
  const parsed = parseDsl(text);
  const report = buildReport(parsed.file, parsed.errors, text, '<hostile>');
  const entry = { stem: 'h', file: 'agents/h.symbi', text };
  const verdict = conversationalVerdict(entry, [entry], parsed);
  JSON.stringify(report, null, 2);
  const verdicts = [verdict.invocable ? '' : definitionRefusalText(verdict.refusal)];
  return { report, verdicts, ms: performance.now() - started };
}

function assertBounded({ report, verdicts, ms }: ReturnType<typeof analyse>, text: string): void {
  for (const verdict of verdicts) assert.ok(verdict.length <= 2 * MESSAGE_MAX_CHARS, `a ${verdict.length}-character verdict: ${verdict.slice(0, 120)}`);
  assert.ok(report.errors.length <= DSL_MAX_ERRORS + 1, `${report.errors.length} syntax errors`);
  assert.ok(report.extraction_errors.length <= DSL_MAX_ERRORS + 1, `${report.extraction_errors.length} extraction errors`);
  for (const e of [...report.errors, ...report.extraction_errors]) {
    assert.ok(e.message.length <= MESSAGE_MAX_CHARS, `a ${e.message.length}-character message: ${e.message.slice(0, 120)}`);
    assert.ok(!/[\r\n]/.test(e.message));
  }
  const kib = Math.max(1, Buffer.byteLength(text) / 1024);
  assert.ok(ms <= MS_PER_KIB * kib + 2_000, `${ms.toFixed(0)} ms for ${kib.toFixed(0)} KiB`);
}

for (const input of hostileInputs(DSL_FILE_MAX_BYTES)) {
  test(`issue 26 row: ${input.name} is analysed with bounded diagnostics`, () => {
    const analysed = analyse(input.text);
    rowReports.set(input.text, analysed.report);
    assertBounded(analysed, input.text);
    const { report } = analysed;
    assert.ok(!report.errors.some((e) => /stack|internal/.test(e.message)), JSON.stringify(report.errors.slice(0, 2)));
  });
}

test('a long flat list is a list, not nesting: every item is kept', () => {
  const channel = parseDslReport(`channel c { platform = "slack" data_classification { ${'a: b, '.repeat(123_008)}} }`, 'c');
  assert.deepEqual(channel.errors, []);
  assert.equal(channel.channels[0]!.data_classification.length, 123_008);
  const agent = reportOf(`agent a { capabilities = [${'"a",'.repeat(123_050)}] }`, 'a');
  assert.deepEqual(agent.errors, []);
  assert.equal(agent.agents[0]!.capabilities.length, 123_050);
});

test('chains as long as the file allows are walked without recursion: their strings are found', () => {
  for (const unit of ['.b', '("s")', '["s"]', ' + "s"', ' || "s"']) {
    const text = `agent a { capabilities = [a${unit.repeat(40_000)}] }`;
    const report = parseDslReport(text, 'chain');
    assert.deepEqual(report.errors, [], unit);
    assert.equal(report.agents[0]!.capabilities.length, unit.includes('"') ? 40_000 : 0, unit);
  }
});

test('extraction errors stop at the error budget, and names in them are cut short', () => {
  const name = 'n'.repeat(256 * 1024);
  const report = reportOf(`memory ${name} {\n${'retention x\n'.repeat(20_000)}}`, 'm');
  assert.equal(report.extraction_errors.length, DSL_MAX_ERRORS + 1);
  assert.match(report.extraction_errors.at(-1)!.message, /too many extraction errors; stopped after 100/);
  assert.match(report.extraction_errors[0]!.message, /^memory 'n{64}…': invalid retention 'x'/);
  // The name itself is data, kept whole in the report.
  assert.equal(report.memories[0]!.name.length, name.length);
});

test('a vector_weight of a megabyte of digits is refused in linear time, quoted short', () => {
  const report = reportOf(`memory m { search { vector_weight ${'1'.repeat(DSL_FILE_MAX_BYTES - 64)}_1 } }`, 'v');
  assert.equal(report.extraction_errors.length, 1);
  assert.match(report.extraction_errors[0]!.message, /^memory: invalid vector_weight '1{64}…'; write a number such as 0\.7$/);
});

test('a run of characters that start no token is one error naming the first', () => {
  const report = parseDslReport(`agent a { capabilities = ["x"] }\n${'@$'.repeat(1000)}\nagent b {}`, 'r');
  assert.deepEqual(report.errors, [{ line: 2, column: 1, message: 'unexpected character "@"; names are ASCII letters, digits and `_`' }]);
  assert.deepEqual(
    report.agents.map((a) => a.name),
    ['a', 'b'],
  );
});

// ---------------------------------------------------------------------------
// Fuzz: grammar shapes amplified to tens of kilobytes, and Symbiont samples
// mutated by deletion, insertion and duplication of their own text.

const samplesDir = join(repoRoot, 'test', 'fixtures', 'dsl', 'symbiont');
const samples = [
  ...readdirSync(samplesDir)
    .filter((f) => /\.(symbi|dsl)$/.test(f))
    .map((f) => join(samplesDir, f)),
  ...readdirSync(join(samplesDir, 'corpus'))
    .filter((f) => /\.(symbi|dsl)$/.test(f))
    .map((f) => join(samplesDir, 'corpus', f)),
].map((f) => readFileSync(f, 'utf8'));

const amplified = fc
  .tuple(fc.constantFrom(...contexts), fc.array(fc.constantFrom(...units), { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 20_000 }))
  .map(([[prefix, suffix], unitParts, count]) => {
    const unit = unitParts.join('');
    return prefix + unit.repeat(Math.min(count, Math.floor((64 * 1024) / unit.length))) + suffix;
  });

const mutated = fc
  .tuple(
    fc.nat({ max: samples.length - 1 }),
    fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
        fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.constantFrom(...units) }),
        fc.record({ kind: fc.constant('amplify' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 80 }), times: fc.integer({ min: 2, max: 500 }) }),
      ),
      { minLength: 1, maxLength: 5 },
    ),
  )
  .map(([index, edits]) => {
    let text = samples[index]!;
    for (const m of edits) {
      const at = text.length === 0 ? 0 : m.at % (text.length + 1);
      if (m.kind === 'delete') text = text.slice(0, at) + text.slice(at + m.len);
      else if (m.kind === 'insert') text = text.slice(0, at) + m.text + text.slice(at);
      else if (text.length < 256 * 1024) text = text.slice(0, at) + text.slice(at, at + m.len).repeat(m.times) + text.slice(at);
    }
    return text;
  });

test('fuzz: amplified grammar shapes give bounded reports in bounded time', () => {
  fc.assert(
    fc.property(amplified, (text) => {
      assertBounded(analyse(text), text);
    }),
    { numRuns: 120 },
  );
});

test('fuzz: mutated and amplified Symbiont samples give bounded reports in bounded time', () => {
  fc.assert(
    fc.property(mutated, (text) => {
      assertBounded(analyse(text), text);
    }),
    { numRuns: 200 },
  );
});

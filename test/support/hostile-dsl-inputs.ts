// The hostile DSL texts of issue 26, each within the 1 MiB limit, shared by the
// hostile-input tests and scripts/bench/bench-dsl-hostile.ts.

const KIB = 1024;

/** `repeat` copies of `unit`, cut so the whole text stays within `budget` characters. */
function fill(prefix: string, unit: string, suffix: string, budget: number): string {
  const count = Math.max(0, Math.floor((budget - prefix.length - suffix.length) / unit.length));
  return prefix + unit.repeat(count) + suffix;
}

/** Records nested `depth` deep, repeated as metadata pairs until `budget` characters. */
function nestedRecords(depth: number, budget: number): string {
  const one = `k = ${'{ a: '.repeat(depth)}1${' }'.repeat(depth)}\n`;
  return fill('metadata {\n', one, '}\n', budget);
}

/** Places where a repeated unit can grow: each a prefix and suffix around the repetition. */
export const AMPLIFIED_CONTEXTS: [string, string][] = [
  ['agent a { capabilities = [', '] }'],
  ['metadata { k = ', ' }'],
  ['policy p { allow: ', ' }'],
  ['policy p { deny: "x" if ', ' }'],
  ['agent a { with timeout = ', ' {} }'],
  ['function f() { let x = ', '; }'],
  ['function f() { ', ' }'],
  ['memory m { search { vector_weight ', ' } }'],
  ['memory m { retention ', ' }'],
  ['channel c { data_classification { ', ' } }'],
  ['schedule s { cron = ', ' }'],
  ['webhook w { path ', ' }'],
  ['type T = { ', ' }'],
  ['agent ', ' { function f() {} }'],
  ['agent a(x: T) { policy ', ' { audit: x } }'],
  ['memory ', ' { retention x\nretention y }'],
  ['', ''],
];
/** Units repeated inside those contexts: chain links, list items, openers and characters that start no token. */
export const AMPLIFIED_UNITS = [
  '.b',
  '()',
  '[0]',
  '+a',
  '||a',
  '&&a',
  '"a",',
  'a,',
  '{ a: ',
  '[',
  '(',
  '!',
  '- ',
  '1',
  '1_',
  '1.',
  '"',
  '\\',
  '@',
  '\u00a0',
  'a: b, ',
  'retention x\n',
  'if a { ',
  '} ',
  'else if a {} ',
  'x => ',
  'Some(',
  'Array<',
  'n',
  '#',
  '/*',
  'vault://a/',
  '30s ',
  'a ',
  '; ',
];

export interface HostileInput {
  name: string;
  text: string;
}

/** One entry per row of the table (the 1 MiB variants where the row has several sizes). */
export function hostileInputs(maxBytes = 1024 * KIB): HostileInput[] {
  const digits = (n: number) => `memory m { search { vector_weight ${'1'.repeat(n)}_1 } }`;
  return [
    { name: 'vector_weight with 16,000 digits', text: digits(16_000) },
    { name: 'vector_weight with 64 KiB of digits', text: digits(64 * KIB) },
    { name: 'vector_weight with 1 MiB of digits', text: digits(maxBytes - 64) },
    { name: 'records nested 254 deep, 1 MiB', text: nestedRecords(254, maxBytes) },
    { name: '1 MiB of @', text: '@'.repeat(maxBytes) },
    { name: 'member chain .b x 5,347', text: `agent a { capabilities = [a${'.b'.repeat(5347)}] }` },
    { name: 'member chain to 1 MiB', text: fill('agent a { capabilities = [a', '.b', '] }', maxBytes) },
    { name: 'call chain to 1 MiB', text: fill('agent a { capabilities = [a', '()', '] }', maxBytes) },
    { name: 'index chain to 1 MiB', text: fill('agent a { capabilities = [a', '[0]', '] }', maxBytes) },
    { name: '+ chain to 1 MiB', text: fill('agent a { capabilities = [a', '+a', '] }', maxBytes) },
    { name: '|| chain to 1 MiB', text: fill('agent a { capabilities = [a', '||a', '] }', maxBytes) },
    { name: '"a", x 123,050 in capabilities', text: `agent a { capabilities = [${'"a",'.repeat(123_050)}] }` },
    { name: 'data_classification a: b, x 123,008', text: `channel c { data_classification { ${'a: b, '.repeat(123_008)}} }` },
    { name: 'memory with 256 KiB name and 20,000 bad retention lines', text: `memory ${'n'.repeat(256 * KIB)} {\n${'retention x\n'.repeat(20_000)}}` },
    { name: 'memory with 64 KiB name and 4,400 bad retention lines', text: `memory ${'n'.repeat(64 * KIB)} {\n${'retention x\n'.repeat(4_400)}}` },
  ].filter((input) => Buffer.byteLength(input.text, 'utf8') <= maxBytes);
}

// `npm run docs:providers`: writes what the documentation says about each provider kind and wire
// format from their declarations (src/shared/provider/provider-kinds.ts and the wire-*.ts beside it),
// between marker comments: the provider table and the finish-reason table of docs/providers.md, the
// provider table of the README, the values a finished answer carries in docs/cedar-policies.md, and
// the kinds `symbi check --json` may report in docs/check.schema.json. test/unit/provider-docs.test.ts
// fails while any of them differs from what this writes.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FINISH_REASONS, type FinishReason } from '../src/shared/provider/finish-vocabulary.js';
import {
  defaultTokenLimitParameter,
  PROVIDER_KINDS,
  PROVIDERS,
  WIRE_FORMAT_NAMES,
  WIRE_FORMATS,
  type ProviderKind,
} from '../src/shared/provider/provider-kinds.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// The files written, named from the repository's root (a test names the root itself: it may run from a copy of this script).
const PROVIDERS_PAGE = 'docs/providers.md';
const README = 'README.md';
const CEDAR_PAGE = 'docs/cedar-policies.md';
const CHECK_SCHEMA = 'docs/check.schema.json';

const code = (text: string): string => `\`${text}\``;

/** A section's two marker comments; what lies between them is written here. */
function markers(name: string): { start: string; end: string } {
  return { start: `<!-- ${name}: written by \`npm run docs:providers\` from src/shared/provider/provider-kinds.ts -->`, end: `<!-- end of ${name} -->` };
}

/** `page` with the section `name` written anew as `lines`, markers included. */
function withSection(page: string, file: string, name: string, lines: readonly string[]): string {
  const { start, end } = markers(name);
  const from = page.indexOf(start);
  const to = page.indexOf(end);
  if (from === -1 || to < from) throw new Error(`${file} has lost its marker comments (${start} ... ${end})`);
  return `${page.slice(0, from)}${[start, ...lines, end].join('\n')}${page.slice(to + end.length)}`;
}

/** The sentence on selection both provider tables open with. */
function selectionSentence(): string[] {
  const titles = PROVIDER_KINDS.map((kind) => PROVIDERS[kind].title);
  return [`The first configured provider in the order ${titles.join(', ')} wins,`, `unless \`SYMBI_PROVIDER=${PROVIDER_KINDS.join('|')}\` picks one.`];
}

/** What configures a provider: its key variables, and its base URL where that alone is enough. */
function setBy(kind: ProviderKind): string {
  const p = PROVIDERS[kind];
  const keys = p.keyVariables.map(code).join(', else ');
  return p.keylessWithBaseUrl ? `${keys}, or ${code(p.baseUrlVariable)} alone (no key sent)` : keys;
}

function providerRow(kind: ProviderKind): string {
  const p = PROVIDERS[kind];
  const wire = WIRE_FORMATS[p.wire];
  const optional = `${code(p.baseUrlVariable)} (${code(p.defaultBaseUrl)}), ${p.modelVariables.map(code).join(', else ')} (${code(p.defaultModel)})`;
  const limit = wire.outputLimit.chosen
    ? `${code(defaultTokenLimitParameter(kind, p.defaultBaseUrl))} at the default URL`
    : `${code(wire.outputLimit.field)}, always`;
  return `| ${p.title} | ${code(kind)} | ${setBy(kind)} | ${optional} | [${wire.title}](${wire.reference}) | ${limit} |`;
}

/** The provider section of docs/providers.md, without its markers. */
export function providerSection(): string[] {
  return [
    '',
    ...selectionSentence(),
    '',
    '| provider | `SYMBI_PROVIDER` | set | optional, with default | wire format | output limit sent as |',
    '|---|---|---|---|---|---|',
    ...PROVIDER_KINDS.map(providerRow),
    '',
  ];
}

/** What a wire format's answer says for one finish, for the finish table. */
function finishCell(wire: (typeof WIRE_FORMAT_NAMES)[number], finish: FinishReason): string {
  const declared = WIRE_FORMATS[wire].finish;
  const values = declared.rows.filter((row) => row.finish === finish && row.raw !== null).map((row) => code(row.raw!));
  if (finish === 'unknown') values.push('any other value');
  const also = declared.alsoRead[finish];
  const listed = values.join(', ');
  return also === undefined ? listed : listed === '' ? also : `${listed}; ${also}`;
}

/** The finish-reason table of docs/providers.md: each wire format's values per finish, without its markers. */
export function finishSection(): string[] {
  const heads = WIRE_FORMAT_NAMES.map((wire) => `${WIRE_FORMATS[wire].title} ${WIRE_FORMATS[wire].finish.field}`);
  return [
    '',
    `| finish | ${heads.join(' | ')} | released |`,
    `|---|${heads.map(() => '---|').join('')}---|`,
    ...FINISH_REASONS.map(
      (finish) =>
        `| ${code(finish)} | ${WIRE_FORMAT_NAMES.map((wire) => finishCell(wire, finish)).join(' | ')} | ${finish === 'complete' ? 'yes, after Cedar permits it' : 'no'} |`,
    ),
    '',
  ];
}

/** The README's provider section, kept short (the README is a front door): the selection and what to set, without its markers. */
export function readmeSection(): string[] {
  return [
    selectionSentence().join(' '),
    '',
    '| provider | set |',
    '|---|---|',
    ...PROVIDER_KINDS.map((kind) => `| ${PROVIDERS[kind].title} | ${setBy(kind)} |`),
  ];
}

/** The values a finished answer carries per wire format, for policy authors, without its markers. */
export function completeValuesSection(): string[] {
  const perWire = WIRE_FORMAT_NAMES.map((wire) => {
    const rows = WIRE_FORMATS[wire].finish.rows.filter((row) => row.finish === 'complete');
    const values = rows.map((row) => (row.raw === null ? '`""` (none given)' : code(`"${row.raw}"`)));
    return `${values.join(' or ')} from ${WIRE_FORMATS[wire].title}`;
  });
  return [`A finished answer's \`provider_finish_reason\` is ${perWire.join(', ')}.`];
}

export const WRITTEN_SECTIONS = [
  { file: PROVIDERS_PAGE, name: 'provider kinds', lines: providerSection },
  { file: PROVIDERS_PAGE, name: 'finish reasons', lines: finishSection },
  { file: README, name: 'provider kinds', lines: readmeSection },
  { file: CEDAR_PAGE, name: 'complete finish values', lines: completeValuesSection },
] as const;

/** `page` (the text of `file`) with every section this script writes into it written anew. */
export function withSections(file: string, page: string): string {
  return WRITTEN_SECTIONS.filter((section) => section.file === file).reduce((text, section) => withSection(text, file, section.name, section.lines()), page);
}

const SCHEMA_KIND_LINE = /^(\s*"kind": \{ "enum": )\[[^\]\n]*\]( \},?)$/m;

/** docs/check.schema.json with the provider kinds written anew (the file is otherwise kept as written). */
export function withProviderKinds(schema: string): string {
  if (!SCHEMA_KIND_LINE.test(schema)) throw new Error('docs/check.schema.json has no one-line "kind": { "enum": [...] } for the provider');
  return schema.replace(
    SCHEMA_KIND_LINE,
    (_line, head: string, tail: string) => `${head}${JSON.stringify([...PROVIDER_KINDS, null]).replace(/,/g, ', ')}${tail}`,
  );
}

/** Every file this script writes (named from the repository's root), with how it writes it. */
export const WRITTEN_FILES: readonly { file: string; write: (text: string) => string }[] = [
  ...[...new Set(WRITTEN_SECTIONS.map((section) => section.file))].map((file) => ({ file, write: (text: string) => withSections(file, text) })),
  { file: CHECK_SCHEMA, write: withProviderKinds },
];

function isMainModule(): boolean {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
}

if (isMainModule()) {
  for (const { file, write } of WRITTEN_FILES) {
    const at = path.join(repoRoot, file);
    const before = fs.readFileSync(at, 'utf8');
    const after = write(before);
    if (after !== before) fs.writeFileSync(at, after);
    process.stdout.write(`${file}: ${after === before ? 'unchanged' : 'written'}\n`);
  }
}

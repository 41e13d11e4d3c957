// `npm run docs:providers`: writes what the documentation says about each provider kind from its
// declaration (src/shared/provider/provider-kinds.ts): the table in docs/providers.md, between its
// two marker comments, and the kinds `symbi check --json` may report in docs/check.schema.json.
// test/unit/provider-docs.test.ts fails while either file differs from what this writes.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultTokenLimitParameter, PROVIDER_KINDS, PROVIDERS, WIRE_FORMATS, type ProviderKind } from '../src/shared/provider/provider-kinds.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const PROVIDERS_PAGE = path.join(repoRoot, 'docs', 'providers.md');
export const CHECK_SCHEMA = path.join(repoRoot, 'docs', 'check.schema.json');

const TABLE_START = '<!-- provider kinds: written by `npm run docs:providers` from src/shared/provider/provider-kinds.ts -->';
const TABLE_END = '<!-- end of provider kinds -->';

const code = (text: string): string => `\`${text}\``;

function row(kind: ProviderKind): string {
  const p = PROVIDERS[kind];
  const set = p.keylessWithBaseUrl ? `${code(p.keyVariable)}, or ${code(p.baseUrlVariable)} alone (no key sent)` : code(p.keyVariable);
  const optional = `${code(p.baseUrlVariable)} (${code(p.defaultBaseUrl)}), ${p.modelVariables.map(code).join(', else ')} (${code(p.defaultModel)})`;
  const limit = p.tokenLimit.chosen ? `${code(defaultTokenLimitParameter(kind, p.defaultBaseUrl))} at the default URL` : `${code('max_tokens')}, always`;
  return `| ${p.title} | ${code(kind)} | ${set} | ${optional} | [${WIRE_FORMATS[p.wire].title}](${WIRE_FORMATS[p.wire].reference}) | ${limit} |`;
}

/** The section of docs/providers.md written from the declarations, markers included. */
export function providerSection(): string {
  const titles = PROVIDER_KINDS.map((kind) => PROVIDERS[kind].title);
  return [
    TABLE_START,
    '',
    `The first configured provider in the order ${titles.join(', ')} wins,`,
    `unless \`SYMBI_PROVIDER=${PROVIDER_KINDS.join('|')}\` picks one.`,
    '',
    '| provider | `SYMBI_PROVIDER` | set | optional, with default | wire format | output limit sent as |',
    '|---|---|---|---|---|---|',
    ...PROVIDER_KINDS.map(row),
    '',
    TABLE_END,
  ].join('\n');
}

/** docs/providers.md with its provider section written anew. */
export function withProviderSection(page: string): string {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error(`docs/providers.md has lost its marker comments (${TABLE_START} ... ${TABLE_END})`);
  return `${page.slice(0, start)}${providerSection()}${page.slice(end + TABLE_END.length)}`;
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

function isMainModule(): boolean {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
}

if (isMainModule()) {
  for (const [file, write] of [
    [PROVIDERS_PAGE, withProviderSection],
    [CHECK_SCHEMA, withProviderKinds],
  ] as const) {
    const before = fs.readFileSync(file, 'utf8');
    const after = write(before);
    if (after !== before) fs.writeFileSync(file, after);
    process.stdout.write(`${path.relative(repoRoot, file)}: ${after === before ? 'unchanged' : 'written'}\n`);
  }
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { providerFromEnvironment } from '../../src/shared/provider/provider-config.js';
import { KEY_VARIABLES, PROVIDER_KINDS, PROVIDERS, WIRE_FORMAT_NAMES, WIRE_FORMATS, type WireFormat } from '../../src/shared/provider/provider-kinds.js';
import { configuredSecrets, redactKeys } from '../../src/shared/secrets/key-redaction.js';
import { completeValuesSection, finishSection, providerSection, readmeSection, withProviderKinds, WRITTEN_FILES } from '../../scripts/provider-docs.js';
import { repoRoot } from '../support/server-entry.js';

// What the documentation says about the provider kinds and wire formats is written from their
// declarations (src/shared/provider/provider-kinds.ts and wire-*.ts) by scripts/provider-docs.ts: the
// committed files must be what it writes, so a new kind or wire format cannot be left out of a table.

const read = (file: string): string => fs.readFileSync(file, 'utf8');
const REGENERATE = 'run `npm run docs:providers` and commit the result';

describe('provider kinds and wire formats in the documentation', () => {
  it('every file the script writes is as it writes it: docs/providers.md, README.md, docs/cedar-policies.md, docs/check.schema.json', () => {
    assert.deepEqual(WRITTEN_FILES.map(({ file }) => file).sort(), ['README.md', 'docs/cedar-policies.md', 'docs/check.schema.json', 'docs/providers.md']);
    for (const { file, write } of WRITTEN_FILES) {
      const text = read(path.join(repoRoot, file));
      // assert.ok, not equal: the whole page in the failure would bury the line saying what to do.
      assert.ok(text === write(text), `${file} differs from the declarations: ${REGENERATE}`);
    }
  });

  it('the tables have a row for every kind and a column for every wire format', () => {
    for (const kind of PROVIDER_KINDS) {
      assert.ok(
        providerSection().some((line) => line.startsWith(`| ${PROVIDERS[kind].title} | \`${kind}\` |`)),
        kind,
      );
      assert.ok(
        readmeSection().some((line) => line.startsWith(`| ${PROVIDERS[kind].title} | \`${PROVIDERS[kind].keyVariables[0]}\``)),
        kind,
      );
    }
    const header = finishSection().find((line) => line.startsWith('| finish |'))!;
    for (const wire of WIRE_FORMAT_NAMES) {
      assert.ok(header.includes(WIRE_FORMATS[wire].title), wire);
      assert.ok(completeValuesSection().join().includes(WIRE_FORMATS[wire].title), wire);
    }
  });

  it('docs/check.schema.json allows exactly the declared kinds', () => {
    const text = read(path.join(repoRoot, 'docs', 'check.schema.json'));
    assert.ok(text === withProviderKinds(text), `docs/check.schema.json differs from the declarations: ${REGENERATE}`);
    const schema = JSON.parse(text) as { properties: { provider: { properties: { kind: { enum: unknown[] } } } } };
    assert.deepEqual(schema.properties.provider.properties.kind.enum, [...PROVIDER_KINDS, null]);
  });

  it('docs/running.md names every key variable it says is redacted', () => {
    const running = read(path.join(repoRoot, 'docs', 'running.md'));
    for (const name of KEY_VARIABLES) assert.ok(running.includes(`\`${name}\``), `docs/running.md names ${name}`);
  });

  it('docs/development.md names every file with a table the type check holds per wire format', () => {
    const page = read(path.join(repoRoot, 'docs', 'development.md'));
    const section = page.slice(page.indexOf('## Adding a model provider'), page.indexOf('## Supported Node.js lines'));
    const named = new Set([...section.matchAll(/`((?:src|test|scripts)\/[^`]+\.ts)`/g)].map((m) => m[1]!));
    const files = (dir: string): string[] =>
      fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
        const relative = `${dir}/${entry.name}`;
        if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : files(relative);
        return relative.endsWith('.ts') ? [relative] : [];
      });
    const perWire = ['src', 'test', 'scripts'].flatMap(files).filter((file) => /Record<WireFormat,/.test(read(path.join(repoRoot, file))));
    assert.ok(perWire.length >= 4, perWire.join(', '));
    for (const file of perWire) assert.ok(named.has(file), `${file} holds a Record<WireFormat, ...>: name it in docs/development.md's list`);
  });

  it("docs/providers.md cites each wire format's specification", () => {
    const page = read(path.join(repoRoot, 'docs', 'providers.md'));
    for (const wire of WIRE_FORMAT_NAMES) assert.ok(page.includes(WIRE_FORMATS[wire].reference), wire);
  });
});

describe('each declaration drives selection and redaction', () => {
  it('each kind is chosen by SYMBI_PROVIDER with its key, its declared defaults and variables filled in', () => {
    for (const kind of PROVIDER_KINDS) {
      const declared = PROVIDERS[kind];
      for (const keyVariable of declared.keyVariables) {
        const selection = providerFromEnvironment({ SYMBI_PROVIDER: kind, [keyVariable]: `key-of-${kind}-long-enough` });
        assert.ok(selection.ok, kind);
        assert.equal(selection.config.kind, kind);
        assert.equal(selection.config.baseUrl, declared.defaultBaseUrl);
        assert.equal(selection.config.model, declared.defaultModel);
        assert.equal(selection.config.keyVariable, keyVariable);
        assert.equal(selection.config.apiKey, `key-of-${kind}-long-enough`);
        assert.equal(selection.config.modelVariable, declared.modelVariables[0]);
      }
    }
  });

  it('with several key variables set, the first declared wins', () => {
    for (const kind of PROVIDER_KINDS) {
      const names = PROVIDERS[kind].keyVariables;
      const selection = providerFromEnvironment({ SYMBI_PROVIDER: kind, ...Object.fromEntries(names.map((name, i) => [name, `key-${i}-of-${kind}-long`])) });
      assert.ok(selection.ok && selection.config.keyVariable === names[0] && selection.config.apiKey === `key-0-of-${kind}-long`, kind);
    }
  });

  it('with no SYMBI_PROVIDER, the first configured kind in the table wins', () => {
    for (const [index, kind] of PROVIDER_KINDS.entries()) {
      const env = Object.fromEntries(PROVIDER_KINDS.slice(index).map((k) => [PROVIDERS[k].keyVariables[0], `key-of-${k}-long-enough`]));
      const selection = providerFromEnvironment(env);
      assert.ok(selection.ok && selection.config.kind === kind, kind);
    }
  });

  it("every kind's keys are secrets whichever kind is chosen", () => {
    const names = PROVIDER_KINDS.flatMap((kind) => PROVIDERS[kind].keyVariables);
    const env = Object.fromEntries(names.map((name) => [name, `key-in-${name}-long-enough`]));
    assert.deepEqual(configuredSecrets(env).sort(), names.map((name) => `key-in-${name}-long-enough`).sort());
  });

  it("text shaped like any wire format's key is redacted from what a provider writes", () => {
    const shaped: Record<WireFormat, string> = {
      'openai-chat': `sk-proj-${'a1B2'.repeat(10)}`,
      'anthropic-messages': `sk-ant-api03-${'x9Y8'.repeat(10)}`,
      'gemini-generate-content': `AIza${'SyD3-f_9'.repeat(4)}abc`,
    };
    for (const wire of WIRE_FORMAT_NAMES) {
      assert.match(shaped[wire], new RegExp(`^(?:${WIRE_FORMATS[wire].keyShape.source})$`), `${wire}: the sample has the declared shape`);
      assert.equal(redactKeys(`the provider said: key ${shaped[wire]} is bad`, []), 'the provider said: key [redacted] is bad', wire);
    }
    // Google's keys are exactly 39 characters: a longer run is not one of them, a shorter one neither.
    assert.equal(redactKeys(`AIza${'b'.repeat(36)}`, []), `AIza${'b'.repeat(36)}`);
    assert.equal(redactKeys(`AIza${'b'.repeat(34)}`, []), `AIza${'b'.repeat(34)}`);
  });
});

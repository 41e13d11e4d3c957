import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { providerFromEnvironment } from '../../src/shared/provider/provider-config.js';
import { KEY_VARIABLES, PROVIDER_KINDS, PROVIDERS } from '../../src/shared/provider/provider-kinds.js';
import { configuredSecrets } from '../../src/shared/secrets/key-redaction.js';
import { providerSection, withProviderKinds, withProviderSection } from '../../scripts/provider-docs.js';
import { repoRoot } from '../support/server-entry.js';

// The two documents `npm run docs:providers` writes, named from this repository's root.
const PROVIDERS_PAGE = path.join(repoRoot, 'docs', 'providers.md');
const CHECK_SCHEMA = path.join(repoRoot, 'docs', 'check.schema.json');

// What the documentation says about the provider kinds is written from their declarations
// (src/shared/provider/provider-kinds.ts) by scripts/provider-docs.ts: the committed files must be
// what it writes, so a new kind cannot be left out of the table or of `symbi check`'s schema.

const read = (file: string): string => fs.readFileSync(file, 'utf8');
const REGENERATE = 'run `npm run docs:providers` and commit the result';

describe('provider kinds in the documentation', () => {
  it('docs/providers.md holds the table written from the declarations', () => {
    const page = read(PROVIDERS_PAGE);
    // assert.ok, not equal: the whole page in the failure would bury the line saying what to do.
    assert.ok(page === withProviderSection(page), `docs/providers.md differs from the declarations: ${REGENERATE}`);
    for (const kind of PROVIDER_KINDS) assert.ok(providerSection().includes(`| ${PROVIDERS[kind].title} | \`${kind}\` |`), kind);
  });

  it('docs/check.schema.json allows exactly the declared kinds', () => {
    const text = read(CHECK_SCHEMA);
    assert.ok(text === withProviderKinds(text), `docs/check.schema.json differs from the declarations: ${REGENERATE}`);
    const schema = JSON.parse(text) as { properties: { provider: { properties: { kind: { enum: unknown[] } } } } };
    assert.deepEqual(schema.properties.provider.properties.kind.enum, [...PROVIDER_KINDS, null]);
  });

  it('docs/running.md names every key variable it says is redacted', () => {
    const running = read(path.join(repoRoot, 'docs', 'running.md'));
    for (const name of KEY_VARIABLES) assert.ok(running.includes(`\`${name}\``), `docs/running.md names ${name}`);
  });
});

describe('each declaration drives selection and redaction', () => {
  it('each kind is chosen by SYMBI_PROVIDER with its key, its declared defaults and variables filled in', () => {
    for (const kind of PROVIDER_KINDS) {
      const declared = PROVIDERS[kind];
      const selection = providerFromEnvironment({ SYMBI_PROVIDER: kind, [declared.keyVariable]: `key-of-${kind}-long-enough` });
      assert.ok(selection.ok, kind);
      assert.equal(selection.config.kind, kind);
      assert.equal(selection.config.baseUrl, declared.defaultBaseUrl);
      assert.equal(selection.config.model, declared.defaultModel);
      assert.equal(selection.config.keyVariable, declared.keyVariable);
      assert.equal(selection.config.modelVariable, declared.modelVariables[0]);
    }
  });

  it('with no SYMBI_PROVIDER, the first configured kind in the table wins', () => {
    for (const [index, kind] of PROVIDER_KINDS.entries()) {
      const env = Object.fromEntries(PROVIDER_KINDS.slice(index).map((k) => [PROVIDERS[k].keyVariable, `key-of-${k}-long-enough`]));
      const selection = providerFromEnvironment(env);
      assert.ok(selection.ok && selection.config.kind === kind, kind);
    }
  });

  it("every kind's key is a secret whichever kind is chosen", () => {
    const env = Object.fromEntries(PROVIDER_KINDS.map((kind) => [PROVIDERS[kind].keyVariable, `key-of-${kind}-long-enough`]));
    assert.deepEqual(configuredSecrets(env).sort(), PROVIDER_KINDS.map((kind) => `key-of-${kind}-long-enough`).sort());
  });
});

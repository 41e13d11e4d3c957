import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_OUTPUT_TOKENS } from '../../src/shared/limits.js';
import { providerConfigFor, type ProviderConfig } from '../../src/shared/provider/provider-config.js';
import { PROVIDER_KINDS, PROVIDERS, WIRE_FORMATS, type ProviderKind } from '../../src/shared/provider/provider-kinds.js';
import { probeProvider } from '../../src/supervisor/commands/provider-probe.js';
import { callProvider } from '../../src/worker/providers/provider-call.js';
import { testModel } from '../support/provider-env.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';

// Every provider kind, from its declaration, in process: the synthetic endpoint speaks its wire
// format and reads its requests back through the same declaration (the last user message with its
// directive, the model, the key), and `symbi check --online`'s probe (provider-probe.ts) reports its
// finished answer or its failure. A kind added to provider-kinds.ts runs here without being named.

const KEY = 'probe-key-0123456789abcdef';

describe('every provider kind through the synthetic endpoint and the online probe', () => {
  let endpoint: SyntheticEndpoint;
  const configOf = (kind: ProviderKind): ProviderConfig => providerConfigFor({ kind, baseUrl: endpoint.origin, model: testModel(kind), apiKey: KEY });

  before(async () => {
    endpoint = await startSyntheticEndpoint();
  });
  after(async () => {
    await endpoint.close();
  });

  for (const kind of PROVIDER_KINDS) {
    const wire = WIRE_FORMATS[PROVIDERS[kind].wire];

    it(`${kind}: the endpoint reads back the prompt's directive, the model and the key`, async () => {
      const request = {
        conversation: [
          { role: 'system' as const, content: 'system text' },
          { role: 'user' as const, content: 'guidance [[secret]]' },
          { role: 'user' as const, content: 'the prompt [[echo]]' },
        ],
        options: { provider: kind, model: testModel(kind), max_tokens: MAX_OUTPUT_TOKENS },
      };
      const response = await callProvider(configOf(kind), request, AbortSignal.timeout(10_000));
      // Only the last user message's directive counts: the guidance's [[secret]] is not obeyed.
      assert.equal(response.content, 'the prompt [[echo]]');
      const seen = endpoint.requests.at(-1)!;
      assert.equal(seen.format, PROVIDERS[kind].wire);
      assert.equal(wire.fake.model(seen.body, seen.path), testModel(kind));
      assert.equal(wire.fake.key(seen.headers), KEY);
      assert.ok(!seen.target.includes(KEY), 'the key is never in the URL');
    });

    it(`${kind}: the online probe reports a finished answer with the provider's own value, never its text`, async () => {
      const outcome = await probeProvider(configOf(kind));
      const complete = wire.finish.rows.filter((row) => row.finish === 'complete').map((row) => row.raw);
      assert.equal(outcome.ok, true, outcome.error ?? '');
      assert.equal(outcome.finish_reason, 'complete');
      assert.ok(complete.includes(outcome.provider_finish_reason), `${outcome.provider_finish_reason} is one of ${complete.join(', ')}`);
      assert.ok(!JSON.stringify(outcome).includes('Hello from the synthetic endpoint'));
    });

    it(`${kind}: the online probe reports a failure's status in our words`, async () => {
      const failing = await startSyntheticEndpoint({ defaultMode: 'http:code=403' });
      try {
        const outcome = await probeProvider({ ...configOf(kind), baseUrl: failing.origin });
        assert.equal(outcome.ok, false);
        assert.equal(outcome.status, 403);
        assert.match(outcome.error ?? '', new RegExp(`HTTP 403 .*the key in ${PROVIDERS[kind].keyVariables[0]} may not use`));
        assert.doesNotMatch(outcome.error ?? '', /PROVIDER-ERROR-TEXT/);
      } finally {
        await failing.close();
      }
    });
  }
});

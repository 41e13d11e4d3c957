import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import { PROVIDERS } from '../../shared/provider/provider-kinds.js';

// Our own words for each HTTP failure a provider can answer with. The provider's error text is never
// used here: it can carry model output or an echo of the prompt, which must not reach the caller or
// the journal unjudged. Statuses as documented by OpenAI
// (https://platform.openai.com/docs/guides/error-codes), Anthropic
// (https://platform.claude.com/docs/en/api/errors) and OpenRouter
// (https://openrouter.ai/docs/api-reference/errors). What differs by provider (its output-limit field,
// the shape of its base URL) comes from its declaration in provider-kinds.ts.

type Explainer = (config: ProviderConfig) => string;

const model = (config: ProviderConfig): string => `"${config.model}" (set by ${config.modelVariable})`;

const EXPLANATIONS: Record<number, Explainer> = {
  400: (c) =>
    PROVIDERS[c.kind].tokenLimit.chosen
      ? `the provider refused the request as invalid (check the model ${model(c)} and the output limit field, sent as ${c.tokenLimitParameter}; SYMBI_TOKEN_LIMIT_PARAMETER changes it)`
      : `the provider refused the request as invalid (check the model ${model(c)})`,
  401: (c) => (c.apiKey === '' ? `the provider wants a key and none was sent (set ${c.keyVariable})` : `the key in ${c.keyVariable} was refused`),
  402: (c) => `the account behind ${c.keyVariable} has insufficient credit`,
  403: (c) => `the key in ${c.keyVariable} may not use this model or endpoint, or the input was refused`,
  404: (c) => `model or URL not found: the model ${model(c)} does not exist there, or ${c.baseUrlVariable} is wrong (${PROVIDERS[c.kind].baseUrlShape})`,
  408: () => 'the provider timed out waiting for the request',
  413: () => 'the request is larger than the provider accepts',
  422: () => 'the provider could not process the request',
  429: () => 'rate limited by the provider',
  500: () => 'the provider had an internal error',
  502: () => 'the provider (or a gateway in front of it) got a bad answer from upstream',
  503: () => 'the provider is unavailable',
  504: () => 'a gateway in front of the provider timed out',
  529: () => 'the provider is overloaded',
};

/** Our fixed words for an HTTP failure status, naming the configuration a user can change. */
export function explainHttpStatus(status: number, config: ProviderConfig): string {
  const explain = EXPLANATIONS[status];
  if (explain !== undefined) return explain(config);
  if (status >= 500) return 'the provider failed';
  if (status >= 400) return 'the provider refused the request';
  return 'the provider gave an answer that is not a success';
}

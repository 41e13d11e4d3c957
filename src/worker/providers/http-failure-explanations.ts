import type { ProviderConfig } from '../../shared/provider/provider-config.js';
import { PROVIDERS, tokenLimitField, tokenLimitIsChosen, wireOf } from '../../shared/provider/provider-kinds.js';
import type { ErrorFields, ExplainContext } from '../../shared/provider/wire-format.js';

// Our own words for each HTTP failure a provider can answer with. The provider's error text is never
// used here: it can carry model output or an echo of the prompt, which must not reach the caller or
// the journal unjudged. Statuses as documented by OpenAI
// (https://platform.openai.com/docs/guides/error-codes), Anthropic
// (https://platform.claude.com/docs/en/api/errors) and OpenRouter
// (https://openrouter.ai/docs/api-reference/errors). Where a status alone would be explained wrongly
// for a wire format (Google answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID,
// not with 401), the wire format declares its own words for that status and error code
// (`failures` in wire-*.ts), which come first. What differs by provider (its output-limit field, the
// shape of its base URL) comes from its declaration in provider-kinds.ts.

type Explainer = (context: ExplainContext) => string;

const model = (c: ExplainContext): string => `"${c.model}" (set by ${c.modelVariable})`;

const BY_STATUS: Record<number, Explainer> = {
  400: (c) =>
    c.limitSwitchable
      ? `the provider refused the request as invalid (check the model ${model(c)} and the output limit field, sent as ${c.limitField}; SYMBI_TOKEN_LIMIT_PARAMETER changes it)`
      : `the provider refused the request as invalid (check the model ${model(c)})`,
  401: (c) => (c.keySent ? `the key in ${c.keyVariable} was refused` : `the provider wants a key and none was sent (set ${c.keyVariable})`),
  402: (c) => `the account behind ${c.keyVariable} has insufficient credit`,
  403: (c) => `the key in ${c.keyVariable} may not use this model or endpoint, or the input was refused`,
  404: (c) => `model or URL not found: the model ${model(c)} does not exist there, or ${c.baseUrlVariable} is wrong (${c.baseUrlShape})`,
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

/** What an explanation may name about the configured provider. */
export function explainContext(config: ProviderConfig): ExplainContext {
  return {
    model: config.model,
    modelVariable: config.modelVariable,
    keyVariable: config.keyVariable,
    keySent: config.apiKey !== '',
    baseUrlVariable: config.baseUrlVariable,
    baseUrlShape: PROVIDERS[config.kind].baseUrlShape,
    limitField: tokenLimitField(config.kind, config.tokenLimitParameter),
    limitSwitchable: tokenLimitIsChosen(config.kind),
  };
}

/** Our fixed words for an HTTP failure: the wire format's own for its status and error code, else the status's, naming the configuration a user can change. */
export function explainHttpFailure(status: number, fields: ErrorFields, config: ProviderConfig): string {
  const codes = [fields.errorType, fields.errorStatus].filter((code) => code !== undefined);
  const own = wireOf(config.kind).failures.find((f) => f.status === status && (f.code === undefined || codes.includes(f.code)));
  const explain = own?.explain ?? BY_STATUS[status];
  if (explain !== undefined) return explain(explainContext(config));
  if (status >= 500) return 'the provider failed';
  if (status >= 400) return 'the provider refused the request';
  return 'the provider gave an answer that is not a success';
}

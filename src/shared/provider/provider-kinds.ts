// The model providers this server can talk to, one declaration each, and the wire formats they speak.
// Everything else that differs by provider is derived from these two tables: selection from the
// environment (provider-config.ts), the key variables redacted (key-redaction.ts), the HTTP failure
// explanations and the token-limit retry (src/worker/), the kinds `symbi check --json` may report
// (docs/check.schema.json) and the table in docs/providers.md (both written by
// scripts/provider-docs.ts; test/unit/provider-docs.test.ts fails when they lag). Per wire format, the
// finish-reason map (finish-reasons.ts), the request and answer translation (the worker's wire
// modules, provider-call.ts) and the synthetic endpoint's simulation are `Record<WireFormat, ...>`
// tables, so a new wire format missing one of them does not compile. docs/development.md has the
// checklist.

/** The request field that carries the output limit on the OpenAI wire format. */
export type TokenLimitParameter = 'max_tokens' | 'max_completion_tokens';

export const TOKEN_LIMIT_PARAMETERS: readonly TokenLimitParameter[] = ['max_tokens', 'max_completion_tokens'];

interface WireFormatDeclaration {
  /** How the documentation names it. */
  title: string;
  /** The specification of its request and answer. */
  reference: string;
}

const WIRE_FORMAT_DECLARATIONS = {
  'openai-chat': {
    title: 'OpenAI Chat Completions',
    reference: 'https://platform.openai.com/docs/api-reference/chat',
  },
  'anthropic-messages': {
    title: 'Anthropic Messages',
    reference: 'https://platform.claude.com/docs/en/api/messages',
  },
} satisfies Record<string, WireFormatDeclaration>;

/** A request and answer shape a provider speaks; one name each, used everywhere. */
export type WireFormat = keyof typeof WIRE_FORMAT_DECLARATIONS;

export const WIRE_FORMATS: Readonly<Record<WireFormat, WireFormatDeclaration>> = WIRE_FORMAT_DECLARATIONS;

/**
 * How a provider names the output limit in its request. `chosen`: the endpoint decides between
 * max_tokens and max_completion_tokens (SYMBI_TOKEN_LIMIT_PARAMETER overrides the default, and a
 * 400 naming the field sent is tried once with the other name); only the OpenAI wire format takes
 * either. `fixed`: always max_tokens, never switched.
 */
export type TokenLimitBehaviour = { chosen: true; defaultFor: (host: string) => TokenLimitParameter } | { chosen: false };

export interface ProviderDeclaration {
  /** How the documentation names it. */
  title: string;
  /** The first word of the operator's provider line (startup.provider, `symbi check`). */
  shownAs: string;
  wire: WireFormat;
  /** The variable its key is read from (always redacted, whichever provider is chosen). */
  keyVariable: string;
  /** Whether its base URL variable alone configures it, sending no key (local servers need none). */
  keylessWithBaseUrl: boolean;
  baseUrlVariable: string;
  defaultBaseUrl: string;
  /** The first one set names the model; with none set, the default is reported as set by the first. */
  modelVariables: readonly [string, ...string[]];
  defaultModel: string;
  tokenLimit: TokenLimitBehaviour;
  /** What its base URL looks like, for the explanation of a 404. */
  baseUrlShape: string;
  /** The header its answers carry their request id in (kept in the journal when it is a short identifier). */
  requestIdHeader: string;
  /** Request-id headers of a gateway in front of it (Azure's API Management), read after every provider's own. */
  gatewayRequestIdHeaders: readonly string[];
}

// Azure OpenAI and Azure AI Foundry hosts. Their v1 API (https://RESOURCE.openai.azure.com/openai/v1,
// Bearer key, deployment name as the model) speaks the OpenAI wire format without api-version.
// https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
const AZURE_HOST_SUFFIXES = ['.openai.azure.com', '.cognitiveservices.azure.com', '.services.ai.azure.com'];

export function isAzureHost(hostname: string): boolean {
  return AZURE_HOST_SUFFIXES.some((suffix) => hostname.endsWith(suffix));
}

// Default models, checked 2026-11-30 against the providers' model and deprecation pages:
// gpt-5.4-mini for OpenAI (gpt-4o-mini is reported to shut down early in 2027, and
// https://platform.openai.com/docs/deprecations names gpt-5.4-mini as the substitute for the mini
// models it retires), openai/gpt-5.4-mini for OpenRouter, claude-sonnet-4-6 for Anthropic
// (claude-sonnet-4-5 is deprecated and retires at the end of November 2026 per
// https://platform.claude.com/docs/en/about-claude/model-deprecations).
//
// Output limit: the OpenAI wire format names it `max_completion_tokens` on OpenAI's own API and on
// Azure OpenAI, where `max_tokens` is deprecated and refused by reasoning models (o-series, gpt-5
// family; https://platform.openai.com/docs/api-reference/chat/create), and `max_tokens` on every
// other OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter), which may not know the new name.
//
// Request ids: x-request-id (OpenAI, OpenRouter), request-id (Anthropic), apim-request-id (Azure).
//
// The order of the entries is the selection order: with no SYMBI_PROVIDER, the first configured wins.
const PROVIDER_DECLARATIONS = {
  openai: {
    title: 'OpenAI',
    shownAs: 'openai-compatible',
    wire: 'openai-chat',
    keyVariable: 'OPENAI_API_KEY',
    keylessWithBaseUrl: true,
    baseUrlVariable: 'OPENAI_BASE_URL',
    defaultBaseUrl: 'https://api.openai.com/v1',
    modelVariables: ['CHAT_MODEL'],
    defaultModel: 'gpt-5.4-mini',
    tokenLimit: {
      chosen: true,
      defaultFor: (host) => (host === 'api.openai.com' || isAzureHost(host) ? 'max_completion_tokens' : 'max_tokens'),
    },
    baseUrlShape: 'an OpenAI-compatible base URL usually ends in /v1',
    requestIdHeader: 'x-request-id',
    gatewayRequestIdHeaders: ['apim-request-id'],
  },
  openrouter: {
    title: 'OpenRouter',
    shownAs: 'openrouter',
    wire: 'openai-chat',
    keyVariable: 'OPENROUTER_API_KEY',
    keylessWithBaseUrl: false,
    baseUrlVariable: 'OPENROUTER_BASE_URL',
    defaultBaseUrl: 'https://openrouter.ai/api/v1',
    modelVariables: ['CHAT_MODEL'],
    defaultModel: 'openai/gpt-5.4-mini',
    tokenLimit: { chosen: true, defaultFor: () => 'max_tokens' },
    baseUrlShape: 'an OpenAI-compatible base URL usually ends in /v1',
    requestIdHeader: 'x-request-id',
    gatewayRequestIdHeaders: [],
  },
  anthropic: {
    title: 'Anthropic',
    shownAs: 'anthropic-messages',
    wire: 'anthropic-messages',
    keyVariable: 'ANTHROPIC_API_KEY',
    keylessWithBaseUrl: false,
    baseUrlVariable: 'ANTHROPIC_BASE_URL',
    defaultBaseUrl: 'https://api.anthropic.com',
    modelVariables: ['ANTHROPIC_MODEL', 'CHAT_MODEL'],
    defaultModel: 'claude-sonnet-4-6',
    tokenLimit: { chosen: false },
    baseUrlShape: 'it is the origin, such as https://api.anthropic.com, without /v1',
    requestIdHeader: 'request-id',
    gatewayRequestIdHeaders: [],
  },
} satisfies Record<string, ProviderDeclaration>;

/** A provider this server can talk to: the value of SYMBI_PROVIDER, and `provider` in the journal. */
export type ProviderKind = keyof typeof PROVIDER_DECLARATIONS;

export const PROVIDERS: Readonly<Record<ProviderKind, ProviderDeclaration>> = PROVIDER_DECLARATIONS;

/** Every kind, in selection order. */
export const PROVIDER_KINDS: readonly ProviderKind[] = Object.keys(PROVIDERS) as ProviderKind[];

/** The output limit's field name a provider takes at a base URL before SYMBI_TOKEN_LIMIT_PARAMETER. */
export function defaultTokenLimitParameter(kind: ProviderKind, baseUrl: string): TokenLimitParameter {
  const limit = PROVIDERS[kind].tokenLimit;
  return limit.chosen ? limit.defaultFor(new URL(baseUrl).hostname) : 'max_tokens';
}

/** The headers a provider's request id may come in: every provider's own, then the gateways'. */
export const REQUEST_ID_HEADERS: readonly string[] = [
  ...new Set([...PROVIDER_KINDS.map((kind) => PROVIDERS[kind].requestIdHeader), ...PROVIDER_KINDS.flatMap((kind) => PROVIDERS[kind].gatewayRequestIdHeaders)]),
];

/** Every provider's key variable: a key set in any of them is a secret, whichever provider is chosen. */
export const KEY_VARIABLES: readonly string[] = PROVIDER_KINDS.map((kind) => PROVIDERS[kind].keyVariable);

// The model providers this server can talk to, one declaration each, built on the wire formats they
// speak (one declaration each too: wire-*.ts, listed in WIRE_FORMATS below). Everything else that
// differs by provider or wire format is derived from these two tables: selection from the
// environment (provider-config.ts), the keys redacted (key-redaction.ts: the key variables, and
// every wire format's key shape), the request, the answer's parser and the HTTP failure
// explanations (src/worker/providers/), the finish-reason table (finish-reasons.ts), how the
// synthetic endpoint reads a request back (src/demo/synthetic-endpoint.ts), and the tables of
// docs/providers.md, the README and docs/cedar-policies.md with the kinds `symbi check --json` may
// report (all written by scripts/provider-docs.ts; test/unit/provider-docs.test.ts fails when they lag).
// What is not read from a declaration is a `Record<WireFormat, ...>` or `Record<ProviderKind, ...>`
// table, so a new entry missing one of them does not compile. docs/development.md has the checklist.

import { ANTHROPIC_MESSAGES } from './wire-anthropic-messages.js';
import { TOKEN_LIMIT_PARAMETERS, type TokenLimitParameter, type WireFormatDeclaration } from './wire-format.js';
import { GEMINI_GENERATE_CONTENT } from './wire-gemini-generate-content.js';
import { OPENAI_CHAT } from './wire-openai-chat.js';

export { TOKEN_LIMIT_PARAMETERS, type TokenLimitParameter };

const WIRE_FORMAT_DECLARATIONS = {
  'openai-chat': OPENAI_CHAT,
  'anthropic-messages': ANTHROPIC_MESSAGES,
  'gemini-generate-content': GEMINI_GENERATE_CONTENT,
} as const satisfies Record<string, WireFormatDeclaration>;

/** A request and answer shape a provider speaks; one name each, used everywhere. */
export type WireFormat = keyof typeof WIRE_FORMAT_DECLARATIONS;

export const WIRE_FORMATS: Readonly<Record<WireFormat, WireFormatDeclaration>> = WIRE_FORMAT_DECLARATIONS;

/** Every wire format, in the table's order. */
export const WIRE_FORMAT_NAMES: readonly WireFormat[] = Object.keys(WIRE_FORMATS) as WireFormat[];

/** The wire formats whose output limit's name the endpoint chooses (OutputLimit in wire-format.ts). */
type ChoosingWire = { [W in WireFormat]: (typeof WIRE_FORMAT_DECLARATIONS)[W]['outputLimit'] extends { chosen: true } ? W : never }[WireFormat];

interface ProviderFields {
  /** How the documentation names it. */
  title: string;
  /** The first word of the operator's provider line (startup.provider, `symbi check`). */
  shownAs: string;
  /** The variables its key is read from, the first one set winning (every one is redacted, whichever provider is chosen). */
  keyVariables: readonly [string, ...string[]];
  /** Whether its base URL variable alone configures it, sending no key (local servers need none). */
  keylessWithBaseUrl: boolean;
  baseUrlVariable: string;
  defaultBaseUrl: string;
  /** The first one set names the model; with none set, the default is reported as set by the first. */
  modelVariables: readonly [string, ...string[]];
  defaultModel: string;
  /** What its base URL looks like, for the explanation of a 404. */
  baseUrlShape: string;
  /** The header its answers carry their request id in (kept in the journal when it is a short identifier); null when it sends none. */
  requestIdHeader: string | null;
  /** Request-id headers of a gateway in front of it (Azure's API Management), read after every provider's own. */
  gatewayRequestIdHeaders: readonly string[];
}

/**
 * A provider: its fields, its wire format and, exactly when that wire format lets the endpoint choose
 * the output limit's name, which name it takes at a host before SYMBI_TOKEN_LIMIT_PARAMETER.
 */
export type ProviderDeclaration = {
  [W in WireFormat]: ProviderFields & { wire: W } & (W extends ChoosingWire
      ? { tokenLimitDefault: (host: string) => TokenLimitParameter }
      : { tokenLimitDefault?: never });
}[WireFormat];

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
// https://platform.claude.com/docs/en/about-claude/model-deprecations). Checked 2026-12-06:
// gemini-3.5-flash for Gemini (generally available since May 2026 with no shutdown date announced,
// while the gemini-2.5 models it follows are retired: https://ai.google.dev/gemini-api/docs/deprecations).
//
// Output limit: the OpenAI wire format names it `max_completion_tokens` on OpenAI's own API and on
// Azure OpenAI, where `max_tokens` is deprecated and refused by reasoning models (o-series, gpt-5
// family; https://platform.openai.com/docs/api-reference/chat/create), and `max_tokens` on every
// other OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter), which may not know the new name.
//
// Keys: Gemini's come from GEMINI_API_KEY or GOOGLE_API_KEY, the two names Google's own libraries
// read (https://ai.google.dev/gemini-api/docs/api-key). Google's libraries prefer GOOGLE_API_KEY
// when both are set; here the Gemini-specific name wins, since GOOGLE_API_KEY is also what other
// Google APIs (Maps, ...) are configured with.
//
// Request ids: x-request-id (OpenAI, OpenRouter), request-id (Anthropic), apim-request-id (Azure);
// the Gemini API documents none.
//
// The order of the entries is the selection order: with no SYMBI_PROVIDER, the first configured wins.
const PROVIDER_DECLARATIONS = {
  openai: {
    title: 'OpenAI',
    shownAs: 'openai-compatible',
    wire: 'openai-chat',
    keyVariables: ['OPENAI_API_KEY'],
    keylessWithBaseUrl: true,
    baseUrlVariable: 'OPENAI_BASE_URL',
    defaultBaseUrl: 'https://api.openai.com/v1',
    modelVariables: ['CHAT_MODEL'],
    defaultModel: 'gpt-5.4-mini',
    tokenLimitDefault: (host) => (host === 'api.openai.com' || isAzureHost(host) ? 'max_completion_tokens' : 'max_tokens'),
    baseUrlShape: 'an OpenAI-compatible base URL usually ends in /v1',
    requestIdHeader: 'x-request-id',
    gatewayRequestIdHeaders: ['apim-request-id'],
  },
  openrouter: {
    title: 'OpenRouter',
    shownAs: 'openrouter',
    wire: 'openai-chat',
    keyVariables: ['OPENROUTER_API_KEY'],
    keylessWithBaseUrl: false,
    baseUrlVariable: 'OPENROUTER_BASE_URL',
    defaultBaseUrl: 'https://openrouter.ai/api/v1',
    modelVariables: ['CHAT_MODEL'],
    defaultModel: 'openai/gpt-5.4-mini',
    tokenLimitDefault: () => 'max_tokens',
    baseUrlShape: 'an OpenAI-compatible base URL usually ends in /v1',
    requestIdHeader: 'x-request-id',
    gatewayRequestIdHeaders: [],
  },
  anthropic: {
    title: 'Anthropic',
    shownAs: 'anthropic-messages',
    wire: 'anthropic-messages',
    keyVariables: ['ANTHROPIC_API_KEY'],
    keylessWithBaseUrl: false,
    baseUrlVariable: 'ANTHROPIC_BASE_URL',
    defaultBaseUrl: 'https://api.anthropic.com',
    modelVariables: ['ANTHROPIC_MODEL', 'CHAT_MODEL'],
    defaultModel: 'claude-sonnet-4-6',
    baseUrlShape: 'it is the origin, such as https://api.anthropic.com, without /v1',
    requestIdHeader: 'request-id',
    gatewayRequestIdHeaders: [],
  },
  gemini: {
    title: 'Google Gemini',
    shownAs: 'gemini',
    wire: 'gemini-generate-content',
    keyVariables: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    keylessWithBaseUrl: false,
    baseUrlVariable: 'GEMINI_BASE_URL',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com',
    modelVariables: ['GEMINI_MODEL', 'CHAT_MODEL'],
    defaultModel: 'gemini-3.5-flash',
    baseUrlShape: 'it is the origin, such as https://generativelanguage.googleapis.com, without /v1beta',
    requestIdHeader: null,
    gatewayRequestIdHeaders: [],
  },
} satisfies Record<string, ProviderDeclaration>;

/** A provider this server can talk to: the value of SYMBI_PROVIDER, and `provider` in the journal. */
export type ProviderKind = keyof typeof PROVIDER_DECLARATIONS;

export const PROVIDERS: Readonly<Record<ProviderKind, ProviderDeclaration>> = PROVIDER_DECLARATIONS;

/** Every kind, in selection order. */
export const PROVIDER_KINDS: readonly ProviderKind[] = Object.keys(PROVIDERS) as ProviderKind[];

/** The wire format a provider speaks. */
export function wireOf(kind: ProviderKind): WireFormatDeclaration {
  return WIRE_FORMATS[PROVIDERS[kind].wire];
}

/** Whether the endpoint chooses the provider's output-limit name (so SYMBI_TOKEN_LIMIT_PARAMETER and the one retry with the other name apply). */
export function tokenLimitIsChosen(kind: ProviderKind): boolean {
  return wireOf(kind).outputLimit.chosen;
}

/** The output limit's field name a provider takes at a base URL before SYMBI_TOKEN_LIMIT_PARAMETER (max_tokens where nothing is chosen: unused). */
export function defaultTokenLimitParameter(kind: ProviderKind, baseUrl: string): TokenLimitParameter {
  return PROVIDERS[kind].tokenLimitDefault?.(new URL(baseUrl).hostname) ?? 'max_tokens';
}

/** The output limit's field as a request of this provider sends it: the chosen name, or the wire format's one field. */
export function tokenLimitField(kind: ProviderKind, chosen: TokenLimitParameter): string {
  const limit = wireOf(kind).outputLimit;
  return limit.chosen ? chosen : limit.field;
}

/** The headers a provider's request id may come in: every provider's own, then the gateways'. */
export const REQUEST_ID_HEADERS: readonly string[] = [
  ...new Set([
    ...PROVIDER_KINDS.flatMap((kind) => PROVIDERS[kind].requestIdHeader ?? []),
    ...PROVIDER_KINDS.flatMap((kind) => PROVIDERS[kind].gatewayRequestIdHeaders),
  ]),
];

/** Every provider's key variables: a key set in any of them is a secret, whichever provider is chosen. */
export const KEY_VARIABLES: readonly string[] = [...new Set(PROVIDER_KINDS.flatMap((kind) => PROVIDERS[kind].keyVariables))];

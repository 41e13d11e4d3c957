// Which model provider the server talks to, read once from the environment. This is the one place
// that reads provider variables: PROVIDER_ENVIRONMENT_VARIABLES lists every name it reads, so the
// rest of the server can hand a worker exactly those and nothing else.
//
// Selection rules:
// - SYMBI_PROVIDER=openai|openrouter|anthropic picks one explicitly; its key must then be present
//   (for openai, OPENAI_BASE_URL alone is enough, see below).
// - Otherwise the first configured provider in the order OpenAI, OpenRouter, Anthropic wins.
// - OPENAI_BASE_URL without OPENAI_API_KEY configures the OpenAI-compatible provider with no
//   Authorization header: local servers (Ollama, vLLM, LM Studio) need no key, and setting a base URL
//   is an explicit choice of endpoint.
// - Empty or blank variables count as unset.
//
// Default models (checked 2026-11-30 against the providers' model and deprecation pages):
// gpt-5.4-mini for OpenAI (gpt-4o-mini is reported to shut down early in 2027, and
// https://platform.openai.com/docs/deprecations names gpt-5.4-mini as the substitute for the mini
// models it retires), openai/gpt-5.4-mini for
// OpenRouter, claude-sonnet-4-6 for Anthropic (claude-sonnet-4-5 is deprecated and retires at the end
// of November 2026 per https://platform.claude.com/docs/en/about-claude/model-deprecations).
// Anthropic reads ANTHROPIC_MODEL, then CHAT_MODEL.
//
// Output limit: the specification caps a response at 4,096 tokens; SYMBI_MAX_OUTPUT_TOKENS may lower
// it (a vLLM server with a short context rejects a request asking for more than it can hold), never
// raise it. The OpenAI wire format names the limit `max_completion_tokens` on OpenAI's own API and on
// Azure OpenAI, where `max_tokens` is deprecated and refused by reasoning models (o-series, gpt-5
// family; https://platform.openai.com/docs/api-reference/chat/create), and `max_tokens` on every
// other OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter), which may not know the new
// name. SYMBI_TOKEN_LIMIT_PARAMETER overrides the choice.
//
// Proxies: https_proxy / HTTPS_PROXY for an https base URL, http_proxy / HTTP_PROXY for an http one
// (lower case first, as curl reads them), unless no_proxy / NO_PROXY names the host. Resolved once
// here for the one base URL, so the worker never reads the environment.
// Keys and proxy credentials never appear in any message this module produces.

import { MAX_OUTPUT_TOKENS } from '../limits.js';

export type ProviderKind = 'openai' | 'openrouter' | 'anthropic';

/** The request field that carries the output limit on the OpenAI wire format. */
export type TokenLimitParameter = 'max_tokens' | 'max_completion_tokens';

export const TOKEN_LIMIT_PARAMETERS: readonly TokenLimitParameter[] = ['max_tokens', 'max_completion_tokens'];

export interface ProxySetting {
  /** http(s) URL of the proxy; may hold credentials, so it is never shown (see shownProxy). */
  url: string;
  /** The variable it came from, e.g. HTTPS_PROXY. */
  variable: string;
}

export interface ProviderConfig {
  kind: ProviderKind;
  /** http(s) URL without trailing slash, credentials, query or fragment. */
  baseUrl: string;
  model: string;
  /** Empty string when no key is configured (local OpenAI-compatible servers). */
  apiKey: string;
  /** The variables an operator would change, named in errors: the key, the base URL and the model. */
  keyVariable: string;
  baseUrlVariable: string;
  modelVariable: string;
  /** Output tokens asked for: MAX_OUTPUT_TOKENS unless SYMBI_MAX_OUTPUT_TOKENS lowers it. */
  maxOutputTokens: number;
  /** OpenAI wire format only; Anthropic always sends max_tokens. */
  tokenLimitParameter: TokenLimitParameter;
  proxy: ProxySetting | null;
}

export type ProviderSelection = { ok: true; config: ProviderConfig } | { ok: false; message: string };

export const PROVIDER_KINDS: readonly ProviderKind[] = ['openai', 'openrouter', 'anthropic'];

/** Every environment variable this module reads, and nothing else does for the provider. */
export const PROVIDER_ENVIRONMENT_VARIABLES: readonly string[] = [
  'SYMBI_PROVIDER',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'CHAT_MODEL',
  'OPENROUTER_API_KEY',
  'OPENROUTER_BASE_URL',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_MODEL',
  'SYMBI_MAX_OUTPUT_TOKENS',
  'SYMBI_TOKEN_LIMIT_PARAMETER',
  'https_proxy',
  'HTTPS_PROXY',
  'http_proxy',
  'HTTP_PROXY',
  'no_proxy',
  'NO_PROXY',
];

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_OPENROUTER_BASE_URL = 'https://openrouter.ai/api/v1';
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_OPENAI_MODEL = 'gpt-5.4-mini';
export const DEFAULT_OPENROUTER_MODEL = 'openai/gpt-5.4-mini';
export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-6';

// Generous bounds that no real key or model name approaches; they keep hostile values out of headers and logs.
const API_KEY_MAX_CHARS = 4096;
const MODEL_MAX_CHARS = 256;
const BASE_URL_MAX_CHARS = 2048;

function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

class SelectionError extends Error {}

function checkKey(name: string, key: string): string {
  // A key travels in an HTTP header: only visible ASCII is allowed, so no header error can ever concern it.
  if (key.length > API_KEY_MAX_CHARS) {
    throw new SelectionError(`${name} is longer than ${API_KEY_MAX_CHARS} characters`);
  }
  if (!/^[\x21-\x7e]+$/.test(key)) {
    throw new SelectionError(`${name} contains characters not allowed in an HTTP header (allowed: printable ASCII without spaces)`);
  }
  return key;
}

function checkModel(name: string, model: string): string {
  if (model.length > MODEL_MAX_CHARS) {
    throw new SelectionError(`${name} is longer than ${MODEL_MAX_CHARS} characters`);
  }
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(model)) {
    throw new SelectionError(`${name} contains control characters (allowed: a plain model name such as ${DEFAULT_OPENAI_MODEL})`);
  }
  return model;
}

// Azure OpenAI and Azure AI Foundry hosts. Their v1 API (https://RESOURCE.openai.azure.com/openai/v1,
// Bearer key, deployment name as the model) speaks the OpenAI wire format without api-version; the
// older per-deployment URLs need an api-version query and a different path shape.
// https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
const AZURE_HOST_SUFFIXES = ['.openai.azure.com', '.cognitiveservices.azure.com', '.services.ai.azure.com'];

function isAzureHost(hostname: string): boolean {
  return AZURE_HOST_SUFFIXES.some((suffix) => hostname.endsWith(suffix));
}

function checkAzureRoute(name: string, url: URL): void {
  if (!isAzureHost(url.hostname)) return;
  const v1 = `${url.origin}/openai/v1`;
  if (url.pathname.includes('/deployments/') || url.searchParams.has('api-version')) {
    throw new SelectionError(
      `${name} is a legacy Azure OpenAI deployment URL (.../openai/deployments/NAME?api-version=...); use the v1 route ${v1} with the deployment name in CHAT_MODEL`,
    );
  }
  if (url.pathname.replace(/\/+$/, '') !== '/openai/v1') {
    throw new SelectionError(`${name} is an Azure OpenAI host but not its v1 route; use ${v1} with the deployment name in CHAT_MODEL`);
  }
}

function checkBaseUrl(name: string, value: string): string {
  if (value.length > BASE_URL_MAX_CHARS) {
    throw new SelectionError(`${name} is longer than ${BASE_URL_MAX_CHARS} characters`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SelectionError(`${name} is not a valid URL (allowed: an http:// or https:// URL such as ${DEFAULT_OPENAI_BASE_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SelectionError(`${name} uses ${url.protocol.replace(/:$/, '')} (allowed: http or https)`);
  }
  // Credentials in the URL would end up in logs and error messages; keys belong in the key variables.
  if (url.username !== '' || url.password !== '') {
    throw new SelectionError(`${name} must not contain user name or password (put the key in the key variable)`);
  }
  checkAzureRoute(name, url);
  if (url.search !== '' || url.hash !== '') {
    throw new SelectionError(`${name} must not contain a query or fragment (allowed: scheme, host, port and path)`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function maxOutputTokens(env: NodeJS.ProcessEnv): number {
  const value = read(env, 'SYMBI_MAX_OUTPUT_TOKENS');
  if (value === undefined) return MAX_OUTPUT_TOKENS;
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > MAX_OUTPUT_TOKENS) {
    throw new SelectionError(
      `SYMBI_MAX_OUTPUT_TOKENS must be a whole number from 1 to ${MAX_OUTPUT_TOKENS} (it can lower the specification's limit, never raise it)`,
    );
  }
  return Number(value);
}

/** OpenAI's own API and Azure OpenAI take max_completion_tokens; other compatible servers take max_tokens. */
export function defaultTokenLimitParameter(kind: ProviderKind, baseUrl: string): TokenLimitParameter {
  if (kind !== 'openai') return 'max_tokens';
  const host = new URL(baseUrl).hostname;
  return host === 'api.openai.com' || isAzureHost(host) ? 'max_completion_tokens' : 'max_tokens';
}

function tokenLimitParameter(env: NodeJS.ProcessEnv, kind: ProviderKind, baseUrl: string): TokenLimitParameter {
  const value = read(env, 'SYMBI_TOKEN_LIMIT_PARAMETER');
  if (value === undefined) return defaultTokenLimitParameter(kind, baseUrl);
  const chosen = TOKEN_LIMIT_PARAMETERS.find((p) => p === value);
  if (chosen === undefined) {
    throw new SelectionError(`SYMBI_TOKEN_LIMIT_PARAMETER must be one of ${TOKEN_LIMIT_PARAMETERS.join(', ')}`);
  }
  return chosen;
}

/** Whether a no_proxy list names the host: `*`, an exact host (optionally :port), or a domain suffix. */
export function bypassesProxy(noProxy: string, target: URL): boolean {
  const host = target.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const port = target.port !== '' ? target.port : target.protocol === 'https:' ? '443' : '80';
  return noProxy
    .split(/[\s,]+/)
    .filter((entry) => entry !== '')
    .some((raw) => {
      const entry = raw.toLowerCase();
      if (entry === '*') return true;
      const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry);
      if (match === null) return false;
      if (match[2] !== undefined && match[2] !== port) return false;
      const name = (match[1] as string).replace(/^\[|\]$/g, '').replace(/^\*?\.?/, '');
      return name !== '' && (host === name || host.endsWith(`.${name}`));
    });
}

function checkProxyUrl(variable: string, value: string): string {
  // curl takes a proxy without a scheme as http://.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    // The value may hold proxy credentials: never quote it.
    throw new SelectionError(`${variable} is not a valid proxy URL (allowed: http://host:port or https://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SelectionError(`${variable} names a ${url.protocol.replace(/:$/, '')} proxy (allowed: an http or https proxy)`);
  }
  if (url.hostname === '') throw new SelectionError(`${variable} has no host (allowed: http://host:port)`);
  return url.href;
}

function proxyFor(env: NodeJS.ProcessEnv, baseUrl: string): ProxySetting | null {
  const target = new URL(baseUrl);
  const names = target.protocol === 'https:' ? ['https_proxy', 'HTTPS_PROXY'] : ['http_proxy', 'HTTP_PROXY'];
  const variable = names.find((name) => read(env, name) !== undefined);
  if (variable === undefined) return null;
  const noProxy = read(env, 'no_proxy') ?? read(env, 'NO_PROXY');
  if (noProxy !== undefined && bypassesProxy(noProxy, target)) return null;
  return { url: checkProxyUrl(variable, read(env, variable) as string), variable };
}

/** A proxy URL fit for a log line: scheme, host and port, never credentials. */
export function shownProxy(proxy: ProxySetting): string {
  return new URL(proxy.url).origin;
}

interface ProviderChoice {
  kind: ProviderKind;
  baseUrl: string;
  baseUrlVariable: string;
  model: string;
  modelVariable: string;
  apiKey: string;
  keyVariable: string;
}

function completeConfig(env: NodeJS.ProcessEnv, choice: ProviderChoice): ProviderConfig {
  return {
    ...choice,
    maxOutputTokens: maxOutputTokens(env),
    tokenLimitParameter: tokenLimitParameter(env, choice.kind, choice.baseUrl),
    proxy: proxyFor(env, choice.baseUrl),
  };
}

/** A complete configuration from the essentials, as the environment with no optional variables would give. */
export function providerConfigFor(choice: Pick<ProviderConfig, 'kind' | 'baseUrl' | 'model' | 'apiKey'> & Partial<ProviderConfig>): ProviderConfig {
  const keyVariable = choice.kind === 'openai' ? 'OPENAI_API_KEY' : choice.kind === 'openrouter' ? 'OPENROUTER_API_KEY' : 'ANTHROPIC_API_KEY';
  return {
    keyVariable,
    baseUrlVariable: keyVariable.replace('_API_KEY', '_BASE_URL'),
    modelVariable: choice.kind === 'anthropic' ? 'ANTHROPIC_MODEL' : 'CHAT_MODEL',
    maxOutputTokens: MAX_OUTPUT_TOKENS,
    tokenLimitParameter: defaultTokenLimitParameter(choice.kind, choice.baseUrl),
    proxy: null,
    ...choice,
  };
}

function openAiConfig(env: NodeJS.ProcessEnv): ProviderConfig {
  const key = read(env, 'OPENAI_API_KEY');
  return completeConfig(env, {
    kind: 'openai',
    baseUrl: checkBaseUrl('OPENAI_BASE_URL', read(env, 'OPENAI_BASE_URL') ?? DEFAULT_OPENAI_BASE_URL),
    baseUrlVariable: 'OPENAI_BASE_URL',
    model: checkModel('CHAT_MODEL', read(env, 'CHAT_MODEL') ?? DEFAULT_OPENAI_MODEL),
    modelVariable: 'CHAT_MODEL',
    apiKey: key === undefined ? '' : checkKey('OPENAI_API_KEY', key),
    keyVariable: 'OPENAI_API_KEY',
  });
}

function openRouterConfig(env: NodeJS.ProcessEnv, key: string): ProviderConfig {
  return completeConfig(env, {
    kind: 'openrouter',
    baseUrl: checkBaseUrl('OPENROUTER_BASE_URL', read(env, 'OPENROUTER_BASE_URL') ?? DEFAULT_OPENROUTER_BASE_URL),
    baseUrlVariable: 'OPENROUTER_BASE_URL',
    model: checkModel('CHAT_MODEL', read(env, 'CHAT_MODEL') ?? DEFAULT_OPENROUTER_MODEL),
    modelVariable: 'CHAT_MODEL',
    apiKey: checkKey('OPENROUTER_API_KEY', key),
    keyVariable: 'OPENROUTER_API_KEY',
  });
}

function anthropicConfig(env: NodeJS.ProcessEnv, key: string): ProviderConfig {
  const modelVariable = read(env, 'ANTHROPIC_MODEL') !== undefined || read(env, 'CHAT_MODEL') === undefined ? 'ANTHROPIC_MODEL' : 'CHAT_MODEL';
  return completeConfig(env, {
    kind: 'anthropic',
    baseUrl: checkBaseUrl('ANTHROPIC_BASE_URL', read(env, 'ANTHROPIC_BASE_URL') ?? DEFAULT_ANTHROPIC_BASE_URL),
    baseUrlVariable: 'ANTHROPIC_BASE_URL',
    model: checkModel(modelVariable, read(env, modelVariable) ?? DEFAULT_ANTHROPIC_MODEL),
    modelVariable,
    apiKey: checkKey('ANTHROPIC_API_KEY', key),
    keyVariable: 'ANTHROPIC_API_KEY',
  });
}

function select(env: NodeJS.ProcessEnv): ProviderConfig {
  const explicit = read(env, 'SYMBI_PROVIDER');
  const openAiConfigured = read(env, 'OPENAI_API_KEY') !== undefined || read(env, 'OPENAI_BASE_URL') !== undefined;
  const openRouterKey = read(env, 'OPENROUTER_API_KEY');
  const anthropicKey = read(env, 'ANTHROPIC_API_KEY');

  if (explicit !== undefined) {
    const kind = explicit.toLowerCase();
    if (kind === 'openai') {
      if (!openAiConfigured) {
        throw new SelectionError('SYMBI_PROVIDER=openai but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set');
      }
      return openAiConfig(env);
    }
    if (kind === 'openrouter') {
      if (openRouterKey === undefined) throw new SelectionError('SYMBI_PROVIDER=openrouter but OPENROUTER_API_KEY is not set');
      return openRouterConfig(env, openRouterKey);
    }
    if (kind === 'anthropic') {
      if (anthropicKey === undefined) throw new SelectionError('SYMBI_PROVIDER=anthropic but ANTHROPIC_API_KEY is not set');
      return anthropicConfig(env, anthropicKey);
    }
    const shown = explicit.length > 40 || !/^[\x20-\x7e]+$/.test(explicit) ? 'an unrecognised value' : `"${explicit}"`;
    throw new SelectionError(`SYMBI_PROVIDER is ${shown} (allowed: ${PROVIDER_KINDS.join(', ')})`);
  }

  if (openAiConfigured) return openAiConfig(env);
  if (openRouterKey !== undefined) return openRouterConfig(env, openRouterKey);
  if (anthropicKey !== undefined) return anthropicConfig(env, anthropicKey);
  throw new SelectionError(
    'no model provider is configured (set OPENAI_API_KEY or OPENAI_BASE_URL, OPENROUTER_API_KEY, or ANTHROPIC_API_KEY; SYMBI_PROVIDER picks one)',
  );
}

/** Chooses the provider from the environment, or says in one line why none can be used. */
export function providerFromEnvironment(env: NodeJS.ProcessEnv): ProviderSelection {
  try {
    return { ok: true, config: select(env) };
  } catch (error) {
    if (error instanceof SelectionError) return { ok: false, message: error.message };
    throw error;
  }
}

const WIRE_NAMES: Record<ProviderKind, string> = {
  openai: 'openai-compatible',
  openrouter: 'openrouter',
  anthropic: 'anthropic-messages',
};

/** One line for operators, e.g. "openai-compatible http://127.0.0.1:4000/v1 model gpt-5.4-mini". Never the key. */
export function describeProvider(config: ProviderConfig): string {
  const keyNote = config.apiKey === '' ? ' (no key)' : '';
  const proxyNote = config.proxy === null ? '' : ` via proxy ${shownProxy(config.proxy)} (${config.proxy.variable})`;
  return `${WIRE_NAMES[config.kind]} ${config.baseUrl} model ${config.model}${keyNote}${proxyNote}`;
}

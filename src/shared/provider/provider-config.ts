// Which model provider the server talks to, read once from the environment. This is the one place
// that reads provider variables: PROVIDER_ENVIRONMENT_VARIABLES lists every name it reads. What
// differs by provider (its variables, defaults and output-limit field) is declared once in
// provider-kinds.ts; this module applies the rules below to those declarations.
//
// Selection rules:
// - SYMBI_PROVIDER=<kind> picks one explicitly; its key must then be present (for a provider whose
//   base URL alone configures it, as OpenAI's does, that is enough, see below).
// - Otherwise the first configured provider in the table's order wins.
// - OPENAI_BASE_URL without OPENAI_API_KEY configures the OpenAI-compatible provider with no
//   Authorization header: local servers (Ollama, vLLM, LM Studio) need no key, and setting a base URL
//   is an explicit choice of endpoint.
// - Empty or blank variables count as unset.
// - A provider with several key variables (Gemini: GEMINI_API_KEY, then GOOGLE_API_KEY) or model
//   variables (Anthropic: ANTHROPIC_MODEL, then CHAT_MODEL) reads the first one set.
// - A model name that goes into the URL path (Gemini's) may hold nothing that would change the path:
//   no `/`, `\`, `?`, `#`, `%`, `..`, white space or control characters (wire-format.ts, modelPathProblem).
//
// Output limit: the specification caps a response at 4,096 tokens; SYMBI_MAX_OUTPUT_TOKENS may lower
// it (a vLLM server with a short context rejects a request asking for more than it can hold), never
// raise it. Where the provider's field name is chosen per endpoint (provider-kinds.ts),
// SYMBI_TOKEN_LIMIT_PARAMETER overrides the default.
//
// Proxies: https_proxy / HTTPS_PROXY for an https base URL, http_proxy / HTTP_PROXY for an http one
// (lower case first, as curl reads them), unless no_proxy / NO_PROXY names the host. Resolved once
// here for the one base URL, so the worker never reads the environment.
// Keys and proxy credentials never appear in any message this module produces.

import { MAX_OUTPUT_TOKENS } from '../limits.js';
import {
  defaultTokenLimitParameter,
  isAzureHost,
  PROVIDER_KINDS,
  PROVIDERS,
  TOKEN_LIMIT_PARAMETERS,
  wireOf,
  type ProviderKind,
  type TokenLimitParameter,
} from './provider-kinds.js';
import { modelPathProblem } from './wire-format.js';

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
  /** The variables an operator would change, named in errors: the key (the one it was read from), the base URL and the model. */
  keyVariable: string;
  baseUrlVariable: string;
  modelVariable: string;
  /** Output tokens asked for: MAX_OUTPUT_TOKENS unless SYMBI_MAX_OUTPUT_TOKENS lowers it. */
  maxOutputTokens: number;
  /** Sent only by a provider whose field name is chosen per endpoint (provider-kinds.ts); the others send their wire format's one field. */
  tokenLimitParameter: TokenLimitParameter;
  proxy: ProxySetting | null;
}

export type ProviderSelection = { ok: true; config: ProviderConfig } | { ok: false; message: string };

/** Every environment variable this module reads, and nothing else does for the provider. */
export const PROVIDER_ENVIRONMENT_VARIABLES: readonly string[] = [
  'SYMBI_PROVIDER',
  ...new Set(PROVIDER_KINDS.flatMap((kind) => [...PROVIDERS[kind].keyVariables, PROVIDERS[kind].baseUrlVariable, ...PROVIDERS[kind].modelVariables])),
  'SYMBI_MAX_OUTPUT_TOKENS',
  'SYMBI_TOKEN_LIMIT_PARAMETER',
  'https_proxy',
  'HTTPS_PROXY',
  'http_proxy',
  'HTTP_PROXY',
  'no_proxy',
  'NO_PROXY',
];

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

function checkModel(name: string, model: string, kind: ProviderKind): string {
  if (model.length > MODEL_MAX_CHARS) {
    throw new SelectionError(`${name} is longer than ${MODEL_MAX_CHARS} characters`);
  }
  // oxlint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(model)) {
    throw new SelectionError(`${name} contains control characters (allowed: a plain model name such as ${PROVIDERS[kind].defaultModel})`);
  }
  // The value is never quoted: it may be anything, and the line goes to the caller and the log.
  const problem = wireOf(kind).modelInPath ? modelPathProblem(model) : undefined;
  if (problem !== undefined) {
    throw new SelectionError(
      `${name} ${problem}, which cannot go into the request's URL path (allowed: a model name such as ${PROVIDERS[kind].defaultModel}, without a models/ prefix)`,
    );
  }
  return model;
}

// Azure's older per-deployment URLs need an api-version query and a different path shape than its
// v1 API (provider-kinds.ts), which is the one this server speaks.
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
    throw new SelectionError(`${name} is not a valid URL (allowed: an http:// or https:// URL such as ${PROVIDERS.openai.defaultBaseUrl})`);
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
  const declared = PROVIDERS[choice.kind];
  return {
    keyVariable: declared.keyVariables[0],
    baseUrlVariable: declared.baseUrlVariable,
    modelVariable: declared.modelVariables[0],
    maxOutputTokens: MAX_OUTPUT_TOKENS,
    tokenLimitParameter: defaultTokenLimitParameter(choice.kind, choice.baseUrl),
    proxy: null,
    ...choice,
  };
}

/** The variable a provider's key is read from: the first of its key variables that is set. */
function keyVariableOf(env: NodeJS.ProcessEnv, kind: ProviderKind): string | undefined {
  return PROVIDERS[kind].keyVariables.find((name) => read(env, name) !== undefined);
}

/** Whether the environment configures this provider: a key is set, or its base URL where that alone is enough. */
function isConfigured(env: NodeJS.ProcessEnv, kind: ProviderKind): boolean {
  const declared = PROVIDERS[kind];
  return keyVariableOf(env, kind) !== undefined || (declared.keylessWithBaseUrl && read(env, declared.baseUrlVariable) !== undefined);
}

/** The variables any one of which configures a provider: its key variables, and its base URL where that alone is enough. */
function configuringVariables(kind: ProviderKind): string[] {
  const declared = PROVIDERS[kind];
  return [...declared.keyVariables, ...(declared.keylessWithBaseUrl ? [declared.baseUrlVariable] : [])];
}

/** What configures a provider, for a line saying none is configured: "OPENROUTER_API_KEY", "OPENAI_API_KEY or OPENAI_BASE_URL". */
function configuredBy(kind: ProviderKind): string {
  return configuringVariables(kind).join(' or ');
}

/** Why an explicitly chosen provider is not configured: "ANTHROPIC_API_KEY is not set", "neither OPENAI_API_KEY nor OPENAI_BASE_URL is set". */
function notConfigured(kind: ProviderKind): string {
  const names = configuringVariables(kind);
  return names.length === 1 ? `${names[0]} is not set` : `neither ${names.slice(0, -1).join(', ')} nor ${names.at(-1)} is set`;
}

function configFor(env: NodeJS.ProcessEnv, kind: ProviderKind): ProviderConfig {
  const declared = PROVIDERS[kind];
  const keyVariable = keyVariableOf(env, kind) ?? declared.keyVariables[0];
  const key = read(env, keyVariable);
  const modelVariable = declared.modelVariables.find((name) => read(env, name) !== undefined) ?? declared.modelVariables[0];
  return completeConfig(env, {
    kind,
    baseUrl: checkBaseUrl(declared.baseUrlVariable, read(env, declared.baseUrlVariable) ?? declared.defaultBaseUrl),
    baseUrlVariable: declared.baseUrlVariable,
    model: checkModel(modelVariable, read(env, modelVariable) ?? declared.defaultModel, kind),
    modelVariable,
    apiKey: key === undefined ? '' : checkKey(keyVariable, key),
    keyVariable,
  });
}

function select(env: NodeJS.ProcessEnv): ProviderConfig {
  const explicit = read(env, 'SYMBI_PROVIDER');
  if (explicit !== undefined) {
    const kind = PROVIDER_KINDS.find((k) => k === explicit.toLowerCase());
    if (kind === undefined) {
      const shown = explicit.length > 40 || !/^[\x20-\x7e]+$/.test(explicit) ? 'an unrecognised value' : `"${explicit}"`;
      throw new SelectionError(`SYMBI_PROVIDER is ${shown} (allowed: ${PROVIDER_KINDS.join(', ')})`);
    }
    if (!isConfigured(env, kind)) throw new SelectionError(`SYMBI_PROVIDER=${kind} but ${notConfigured(kind)}`);
    return configFor(env, kind);
  }

  const kind = PROVIDER_KINDS.find((k) => isConfigured(env, k));
  if (kind !== undefined) return configFor(env, kind);
  const choices = PROVIDER_KINDS.map((k) => configuredBy(k));
  const listed = choices.length > 1 ? `${choices.slice(0, -1).join(', ')}, or ${choices.at(-1)}` : choices.join('');
  throw new SelectionError(`no model provider is configured (set ${listed}; SYMBI_PROVIDER picks one)`);
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

/** One line for operators, e.g. "openai-compatible http://127.0.0.1:4000/v1 model gpt-5.4-mini". Never the key. */
export function describeProvider(config: ProviderConfig): string {
  const keyNote = config.apiKey === '' ? ' (no key)' : '';
  const proxyNote = config.proxy === null ? '' : ` via proxy ${shownProxy(config.proxy)} (${config.proxy.variable})`;
  return `${PROVIDERS[config.kind].shownAs} ${config.baseUrl} model ${config.model}${keyNote}${proxyNote}`;
}

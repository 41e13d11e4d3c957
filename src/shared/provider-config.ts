// Which model provider the server talks to, read once from the environment.
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
// Defaults: CHAT_MODEL falls back to gpt-4o-mini (OpenAI), openai/gpt-4o-mini (OpenRouter);
// Anthropic reads ANTHROPIC_MODEL, then CHAT_MODEL, then claude-sonnet-4-5.
// Keys never appear in any message this module produces.

export type ProviderKind = 'openai' | 'openrouter' | 'anthropic';

export interface ProviderConfig {
  kind: ProviderKind;
  /** http(s) URL without trailing slash, credentials, query or fragment. */
  baseUrl: string;
  model: string;
  /** Empty string when no key is configured (local OpenAI-compatible servers). */
  apiKey: string;
}

export type ProviderSelection = { ok: true; config: ProviderConfig } | { ok: false; message: string };

export const PROVIDER_KINDS: readonly ProviderKind[] = ['openai', 'openrouter', 'anthropic'];

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_OPENROUTER_BASE_URL = 'https://openrouter.ai/api/v1';
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_OPENAI_MODEL = 'gpt-4o-mini';
export const DEFAULT_OPENROUTER_MODEL = 'openai/gpt-4o-mini';
export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-5';

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
  if (/[\u0000-\u001f\u007f]/.test(model)) {
    throw new SelectionError(`${name} contains control characters (allowed: a plain model name such as ${DEFAULT_OPENAI_MODEL})`);
  }
  return model;
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
  if (url.search !== '' || url.hash !== '') {
    throw new SelectionError(`${name} must not contain a query or fragment (allowed: scheme, host, port and path)`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function openAiConfig(env: NodeJS.ProcessEnv): ProviderConfig {
  const key = read(env, 'OPENAI_API_KEY');
  return {
    kind: 'openai',
    baseUrl: checkBaseUrl('OPENAI_BASE_URL', read(env, 'OPENAI_BASE_URL') ?? DEFAULT_OPENAI_BASE_URL),
    model: checkModel('CHAT_MODEL', read(env, 'CHAT_MODEL') ?? DEFAULT_OPENAI_MODEL),
    apiKey: key === undefined ? '' : checkKey('OPENAI_API_KEY', key),
  };
}

function openRouterConfig(env: NodeJS.ProcessEnv, key: string): ProviderConfig {
  return {
    kind: 'openrouter',
    baseUrl: checkBaseUrl('OPENROUTER_BASE_URL', read(env, 'OPENROUTER_BASE_URL') ?? DEFAULT_OPENROUTER_BASE_URL),
    model: checkModel('CHAT_MODEL', read(env, 'CHAT_MODEL') ?? DEFAULT_OPENROUTER_MODEL),
    apiKey: checkKey('OPENROUTER_API_KEY', key),
  };
}

function anthropicConfig(env: NodeJS.ProcessEnv, key: string): ProviderConfig {
  const modelVariable = read(env, 'ANTHROPIC_MODEL') !== undefined ? 'ANTHROPIC_MODEL' : 'CHAT_MODEL';
  return {
    kind: 'anthropic',
    baseUrl: checkBaseUrl('ANTHROPIC_BASE_URL', read(env, 'ANTHROPIC_BASE_URL') ?? DEFAULT_ANTHROPIC_BASE_URL),
    model: checkModel(modelVariable, read(env, modelVariable) ?? DEFAULT_ANTHROPIC_MODEL),
    apiKey: checkKey('ANTHROPIC_API_KEY', key),
  };
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

/** One line for operators, e.g. "openai-compatible http://127.0.0.1:4000/v1 model gpt-4o-mini". Never the key. */
export function describeProvider(config: ProviderConfig): string {
  const keyNote = config.apiKey === '' ? ' (no key)' : '';
  return `${WIRE_NAMES[config.kind]} ${config.baseUrl} model ${config.model}${keyNote}`;
}

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bypassesProxy,
  describeProvider,
  PROVIDER_ENVIRONMENT_VARIABLES,
  providerFromEnvironment,
  type ProviderConfig,
} from '../../src/shared/provider/provider-config.js';
import { PROVIDERS } from '../../src/shared/provider/provider-kinds.js';

function selected(env: NodeJS.ProcessEnv): ProviderConfig {
  const result = providerFromEnvironment(env);
  assert.ok(result.ok, result.ok ? '' : result.message);
  return result.config;
}

function refused(env: NodeJS.ProcessEnv): string {
  const result = providerFromEnvironment(env);
  assert.equal(result.ok, false, 'expected a refusal');
  const message = (result as { message: string }).message;
  assert.ok(!message.includes('\n'), 'the message is one line');
  return message;
}

describe('provider selection from the environment', () => {
  it('refuses when nothing is configured, naming the variables', () => {
    const message = refused({});
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY']) {
      assert.match(message, new RegExp(name));
    }
  });

  it('treats blank variables as unset', () => {
    refused({ OPENAI_API_KEY: '', OPENROUTER_API_KEY: '   ', ANTHROPIC_API_KEY: '' });
  });

  it('OpenAI key alone: default base URL and model', () => {
    assert.deepEqual(selected({ OPENAI_API_KEY: 'sk-one' }), {
      kind: 'openai',
      baseUrl: PROVIDERS.openai.defaultBaseUrl,
      baseUrlVariable: 'OPENAI_BASE_URL',
      model: PROVIDERS.openai.defaultModel,
      modelVariable: 'CHAT_MODEL',
      apiKey: 'sk-one',
      keyVariable: 'OPENAI_API_KEY',
      maxOutputTokens: 4096,
      tokenLimitParameter: 'max_completion_tokens',
      proxy: null,
    });
  });

  it('OpenAI base URL alone configures a keyless local provider, trailing slashes removed', () => {
    assert.deepEqual(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1/', CHAT_MODEL: 'llama3.2' }), {
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      baseUrlVariable: 'OPENAI_BASE_URL',
      model: 'llama3.2',
      modelVariable: 'CHAT_MODEL',
      apiKey: '',
      keyVariable: 'OPENAI_API_KEY',
      maxOutputTokens: 4096,
      tokenLimitParameter: 'max_tokens',
      proxy: null,
    });
  });

  it('OpenRouter key alone: its base URL and default model, with overrides', () => {
    assert.deepEqual(selected({ OPENROUTER_API_KEY: 'or-key' }), {
      kind: 'openrouter',
      baseUrl: PROVIDERS.openrouter.defaultBaseUrl,
      baseUrlVariable: 'OPENROUTER_BASE_URL',
      model: PROVIDERS.openrouter.defaultModel,
      modelVariable: 'CHAT_MODEL',
      apiKey: 'or-key',
      keyVariable: 'OPENROUTER_API_KEY',
      maxOutputTokens: 4096,
      tokenLimitParameter: 'max_tokens',
      proxy: null,
    });
    const custom = selected({ OPENROUTER_API_KEY: 'or-key', OPENROUTER_BASE_URL: 'https://proxy.example/api/v1', CHAT_MODEL: 'x/y' });
    assert.equal(custom.baseUrl, 'https://proxy.example/api/v1');
    assert.equal(custom.model, 'x/y');
  });

  it('Anthropic key alone: ANTHROPIC_MODEL before CHAT_MODEL before the default', () => {
    assert.deepEqual(selected({ ANTHROPIC_API_KEY: 'ak' }), {
      kind: 'anthropic',
      baseUrl: PROVIDERS.anthropic.defaultBaseUrl,
      baseUrlVariable: 'ANTHROPIC_BASE_URL',
      model: PROVIDERS.anthropic.defaultModel,
      modelVariable: 'ANTHROPIC_MODEL',
      apiKey: 'ak',
      keyVariable: 'ANTHROPIC_API_KEY',
      maxOutputTokens: 4096,
      tokenLimitParameter: 'max_tokens',
      proxy: null,
    });
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', CHAT_MODEL: 'chat-m' }).model, 'chat-m');
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', CHAT_MODEL: 'chat-m', ANTHROPIC_MODEL: 'anth-m' }).model, 'anth-m');
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', ANTHROPIC_BASE_URL: 'http://localhost:9999' }).baseUrl, 'http://localhost:9999');
  });

  it('Gemini key alone: GEMINI_API_KEY before GOOGLE_API_KEY, GEMINI_MODEL before CHAT_MODEL before the default', () => {
    assert.deepEqual(selected({ GEMINI_API_KEY: 'gk' }), {
      kind: 'gemini',
      baseUrl: 'https://generativelanguage.googleapis.com',
      baseUrlVariable: 'GEMINI_BASE_URL',
      model: PROVIDERS.gemini.defaultModel,
      modelVariable: 'GEMINI_MODEL',
      apiKey: 'gk',
      keyVariable: 'GEMINI_API_KEY',
      maxOutputTokens: 4096,
      tokenLimitParameter: 'max_tokens',
      proxy: null,
    });
    const google = selected({ GOOGLE_API_KEY: 'google-k' });
    assert.deepEqual([google.kind, google.apiKey, google.keyVariable], ['gemini', 'google-k', 'GOOGLE_API_KEY']);
    assert.equal(selected({ GOOGLE_API_KEY: 'google-k', GEMINI_API_KEY: 'gemini-k' }).apiKey, 'gemini-k');
    assert.equal(selected({ GEMINI_API_KEY: 'gk', CHAT_MODEL: 'chat-m' }).model, 'chat-m');
    assert.equal(selected({ GEMINI_API_KEY: 'gk', CHAT_MODEL: 'chat-m', GEMINI_MODEL: 'gemini-m' }).model, 'gemini-m');
    assert.equal(selected({ GEMINI_API_KEY: 'gk', GEMINI_BASE_URL: 'http://localhost:9999/' }).baseUrl, 'http://localhost:9999');
    assert.match(refused({ SYMBI_PROVIDER: 'gemini', OPENAI_API_KEY: 'a' }), /^SYMBI_PROVIDER=gemini but neither GEMINI_API_KEY nor GOOGLE_API_KEY is set$/);
  });

  it('a Gemini model name that would change the URL path is refused in one line, without quoting it', () => {
    for (const [model, problem] of [
      ['models/gemini-3.5-flash', 'contains "/"'],
      ['..', 'contains ".."'],
      ['gemini?key=stolen', 'contains "?"'],
      ['gemini#frag', 'contains "#"'],
      ['gemini%2Fx', 'contains "%"'],
      ['a\\b', 'contains "\\"'],
      ['gemini 3', 'contains white space'],
      ['gemini\u00e9', 'contains characters other than printable ASCII'],
    ] as const) {
      const message = refused({ GEMINI_API_KEY: 'gk', GEMINI_MODEL: model });
      assert.equal(
        message,
        `GEMINI_MODEL ${problem}, which cannot go into the request's URL path (allowed: a model name such as ${PROVIDERS.gemini.defaultModel}, without a models/ prefix)`,
      );
    }
    assert.match(refused({ GEMINI_API_KEY: 'gk', CHAT_MODEL: 'gem\u0000ini' }), /^CHAT_MODEL contains control characters/);
    // The same names are fine where the model travels in the body.
    assert.equal(selected({ OPENROUTER_API_KEY: 'k', CHAT_MODEL: 'google/gemini-3.5-flash' }).model, 'google/gemini-3.5-flash');
  });

  it('without SYMBI_PROVIDER the first configured one wins: OpenAI, then OpenRouter, then Anthropic, then Gemini', () => {
    const all = { OPENAI_API_KEY: 'a', OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' };
    assert.equal(selected(all).kind, 'openai');
    assert.equal(selected({ OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' }).kind, 'openrouter');
    assert.equal(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', ANTHROPIC_API_KEY: 'c' }).kind, 'openai');
    assert.equal(selected({ ANTHROPIC_API_KEY: 'c', GEMINI_API_KEY: 'd' }).kind, 'anthropic');
  });

  it('SYMBI_PROVIDER picks explicitly, case-insensitively', () => {
    const all = { OPENAI_API_KEY: 'a', OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' };
    assert.equal(selected({ ...all, SYMBI_PROVIDER: 'anthropic' }).kind, 'anthropic');
    assert.equal(selected({ ...all, SYMBI_PROVIDER: 'OpenRouter' }).kind, 'openrouter');
    assert.equal(selected({ ...all, SYMBI_PROVIDER: 'openai' }).apiKey, 'a');
  });

  it('SYMBI_PROVIDER naming a provider without its key is refused, naming the variable', () => {
    assert.match(refused({ SYMBI_PROVIDER: 'anthropic', OPENAI_API_KEY: 'a' }), /ANTHROPIC_API_KEY/);
    assert.match(refused({ SYMBI_PROVIDER: 'openrouter', OPENAI_API_KEY: 'a' }), /OPENROUTER_API_KEY/);
    assert.match(refused({ SYMBI_PROVIDER: 'openai', ANTHROPIC_API_KEY: 'c' }), /OPENAI_API_KEY/);
  });

  it('an unknown SYMBI_PROVIDER is refused, naming the allowed values', () => {
    const message = refused({ SYMBI_PROVIDER: 'mistral', OPENAI_API_KEY: 'a' });
    assert.match(message, /SYMBI_PROVIDER/);
    assert.match(message, /openai, openrouter, anthropic, gemini/);
    assert.match(message, /mistral/);
    // A hostile value is not echoed.
    const hostile = refused({ SYMBI_PROVIDER: 'x\u001b[31m'.repeat(30), OPENAI_API_KEY: 'a' });
    assert.ok(!hostile.includes('\u001b'));
  });

  it('base URLs must be plain http(s) URLs', () => {
    assert.match(refused({ OPENAI_BASE_URL: 'ftp://example.com/v1' }), /OPENAI_BASE_URL.*allowed: http or https/);
    assert.match(refused({ OPENAI_BASE_URL: 'not a url' }), /OPENAI_BASE_URL is not a valid URL/);
    assert.match(refused({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'file:///etc/passwd' }), /ANTHROPIC_BASE_URL/);
    assert.match(refused({ OPENROUTER_API_KEY: 'k', OPENROUTER_BASE_URL: 'https://u:p@example.com' }), /OPENROUTER_BASE_URL must not contain user name/);
    assert.match(refused({ OPENAI_BASE_URL: 'https://example.com/v1?x=1' }), /query or fragment/);
  });

  it('keys that could not travel in a header are refused without quoting them', () => {
    const message = refused({ OPENAI_API_KEY: 'sk-with space-SECRETVALUE' });
    assert.match(message, /OPENAI_API_KEY contains characters not allowed/);
    assert.ok(!message.includes('SECRETVALUE'));
    assert.ok(!refused({ ANTHROPIC_API_KEY: 'a\r\nX-Evil: SECRETVALUE' }).includes('SECRETVALUE'));
  });

  it('model names with control characters are refused', () => {
    assert.match(refused({ OPENAI_API_KEY: 'k', CHAT_MODEL: 'gpt\u0000x' }), /CHAT_MODEL contains control characters/);
  });

  it('describeProvider names the wire format, base URL and model, never the key', () => {
    const key = 'sk-very-secret-key-123';
    const openai = describeProvider(selected({ OPENAI_API_KEY: key, OPENAI_BASE_URL: 'http://127.0.0.1:4000/v1' }));
    assert.equal(openai, `openai-compatible http://127.0.0.1:4000/v1 model ${PROVIDERS.openai.defaultModel}`);
    assert.ok(!openai.includes(key));
    assert.equal(
      describeProvider(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:4000/v1' })),
      `openai-compatible http://127.0.0.1:4000/v1 model ${PROVIDERS.openai.defaultModel} (no key)`,
    );
    assert.equal(
      describeProvider(selected({ ANTHROPIC_API_KEY: key })),
      `anthropic-messages ${PROVIDERS.anthropic.defaultBaseUrl} model ${PROVIDERS.anthropic.defaultModel}`,
    );
    assert.equal(
      describeProvider(selected({ OPENROUTER_API_KEY: key })),
      `openrouter ${PROVIDERS.openrouter.defaultBaseUrl} model ${PROVIDERS.openrouter.defaultModel}`,
    );
    assert.equal(describeProvider(selected({ GEMINI_API_KEY: key })), `gemini ${PROVIDERS.gemini.defaultBaseUrl} model ${PROVIDERS.gemini.defaultModel}`);
  });
});

describe('defaults, output limit, token-limit parameter, Azure and proxies', () => {
  it('defaults are models the providers list as current (checked 2026-11-30, Gemini 2026-12-06), not the retiring ones', () => {
    assert.equal(PROVIDERS.openai.defaultModel, 'gpt-5.4-mini');
    assert.equal(PROVIDERS.openrouter.defaultModel, 'openai/gpt-5.4-mini');
    assert.equal(PROVIDERS.anthropic.defaultModel, 'claude-sonnet-4-6');
    assert.equal(PROVIDERS.gemini.defaultModel, 'gemini-3.5-flash');
  });

  it('max_completion_tokens for OpenAI and Azure OpenAI, max_tokens for every other compatible server', () => {
    assert.equal(selected({ OPENAI_API_KEY: 'k' }).tokenLimitParameter, 'max_completion_tokens');
    assert.equal(selected({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'https://res.openai.azure.com/openai/v1' }).tokenLimitParameter, 'max_completion_tokens');
    assert.equal(selected({ OPENAI_BASE_URL: 'http://localhost:11434/v1' }).tokenLimitParameter, 'max_tokens');
    assert.equal(selected({ OPENAI_BASE_URL: 'http://vllm.internal:8000/v1' }).tokenLimitParameter, 'max_tokens');
    assert.equal(selected({ OPENROUTER_API_KEY: 'k' }).tokenLimitParameter, 'max_tokens');
    assert.equal(
      selected({ OPENAI_BASE_URL: 'http://localhost:8000/v1', SYMBI_TOKEN_LIMIT_PARAMETER: 'max_completion_tokens' }).tokenLimitParameter,
      'max_completion_tokens',
    );
    assert.equal(selected({ OPENAI_API_KEY: 'k', SYMBI_TOKEN_LIMIT_PARAMETER: 'max_tokens' }).tokenLimitParameter, 'max_tokens');
    assert.match(
      refused({ OPENAI_API_KEY: 'k', SYMBI_TOKEN_LIMIT_PARAMETER: 'maxTokens' }),
      /SYMBI_TOKEN_LIMIT_PARAMETER must be one of max_tokens, max_completion_tokens/,
    );
  });

  it('SYMBI_MAX_OUTPUT_TOKENS lowers the output limit and can never raise it past 4,096', () => {
    assert.equal(selected({ OPENAI_API_KEY: 'k', SYMBI_MAX_OUTPUT_TOKENS: '1024' }).maxOutputTokens, 1024);
    assert.equal(selected({ OPENAI_API_KEY: 'k', SYMBI_MAX_OUTPUT_TOKENS: '4096' }).maxOutputTokens, 4096);
    for (const bad of ['4097', '0', '-1', '1e3', 'lots', '99999']) {
      assert.match(refused({ OPENAI_API_KEY: 'k', SYMBI_MAX_OUTPUT_TOKENS: bad }), /SYMBI_MAX_OUTPUT_TOKENS must be a whole number from 1 to 4096/);
    }
  });

  it('refuses a legacy Azure deployment URL, saying to use the /openai/v1 route', () => {
    const legacy = refused({
      OPENAI_API_KEY: 'k',
      OPENAI_BASE_URL: 'https://res.openai.azure.com/openai/deployments/gpt4/chat/completions?api-version=2024-10-21',
    });
    assert.match(legacy, /legacy Azure OpenAI deployment URL/);
    assert.match(legacy, /https:\/\/res\.openai\.azure\.com\/openai\/v1/);
    assert.match(refused({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'https://res.openai.azure.com' }), /use https:\/\/res\.openai\.azure\.com\/openai\/v1/);
    assert.equal(
      selected({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'https://res.openai.azure.com/openai/v1/' }).baseUrl,
      'https://res.openai.azure.com/openai/v1',
    );
  });

  it('takes the proxy from https_proxy / HTTPS_PROXY (or the http ones for an http URL), lower case first', () => {
    assert.deepEqual(selected({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://proxy.corp:3128' }).proxy, {
      url: 'http://proxy.corp:3128/',
      variable: 'HTTPS_PROXY',
    });
    assert.equal(selected({ OPENAI_API_KEY: 'k', https_proxy: 'http://low:1', HTTPS_PROXY: 'http://up:2' }).proxy?.variable, 'https_proxy');
    assert.equal(selected({ OPENAI_API_KEY: 'k', HTTP_PROXY: 'http://proxy:1' }).proxy, null, 'an https URL ignores HTTP_PROXY');
    assert.equal(selected({ OPENAI_BASE_URL: 'http://models.lan/v1', http_proxy: 'proxy:8080' }).proxy?.url, 'http://proxy:8080/');
    assert.equal(selected({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://p:1', NO_PROXY: 'localhost,.openai.com' }).proxy, null);
    assert.equal(selected({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://p:1', no_proxy: '*' }).proxy, null);
  });

  it('a proxy with credentials is used but never shown; a socks proxy or a bad URL is refused without quoting it', () => {
    const config = selected({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://user:pa55word@proxy.corp:3128' });
    assert.equal(config.proxy?.url, 'http://user:pa55word@proxy.corp:3128/');
    const line = describeProvider(config);
    assert.match(line, /via proxy http:\/\/proxy\.corp:3128 \(HTTPS_PROXY\)/);
    assert.ok(!line.includes('pa55word'));
    const socks = refused({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'socks5://user:pa55word@p:1080' });
    assert.match(socks, /HTTPS_PROXY names a socks5 proxy/);
    assert.ok(!socks.includes('pa55word'));
    assert.ok(!refused({ OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://user:pa55word@[bad' }).includes('pa55word'));
  });

  it('NO_PROXY matching: exact host, domain suffix, leading dot or star, port, IPv6, wildcard', () => {
    const at = (url: string) => new URL(url);
    assert.equal(bypassesProxy('example.com', at('https://example.com/v1')), true);
    assert.equal(bypassesProxy('example.com', at('https://api.example.com/v1')), true);
    assert.equal(bypassesProxy('.example.com', at('https://api.example.com/v1')), true);
    assert.equal(bypassesProxy('*.example.com', at('https://api.example.com/v1')), true);
    assert.equal(bypassesProxy('example.com', at('https://notexample.com/v1')), false);
    assert.equal(bypassesProxy('example.com:8443', at('https://example.com/v1')), false);
    assert.equal(bypassesProxy('example.com:443', at('https://example.com/v1')), true);
    assert.equal(bypassesProxy('127.0.0.1, localhost', at('http://127.0.0.1:11434/v1')), true);
    assert.equal(bypassesProxy('[::1]', at('http://[::1]:8000/v1')), true);
    assert.equal(bypassesProxy('*', at('https://anything.example')), true);
    assert.equal(bypassesProxy('', at('https://anything.example')), false);
  });

  it('lists every variable it reads, so a worker can be given exactly those', () => {
    for (const name of [
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'CHAT_MODEL',
      'OPENROUTER_API_KEY',
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_MODEL',
      'GEMINI_API_KEY',
      'GOOGLE_API_KEY',
      'GEMINI_BASE_URL',
      'GEMINI_MODEL',
      'SYMBI_PROVIDER',
      'SYMBI_MAX_OUTPUT_TOKENS',
      'SYMBI_TOKEN_LIMIT_PARAMETER',
      'HTTPS_PROXY',
      'https_proxy',
      'HTTP_PROXY',
      'http_proxy',
      'NO_PROXY',
      'no_proxy',
    ]) {
      assert.ok(PROVIDER_ENVIRONMENT_VARIABLES.includes(name), name);
    }
    // The selection made from exactly those variables equals the one made from the whole environment.
    const env = { OPENAI_API_KEY: 'k', HTTPS_PROXY: 'http://p:1', NO_PROXY: 'x', UNRELATED: 'y', PATH: '/bin' };
    const narrowed = Object.fromEntries(Object.entries(env).filter(([k]) => PROVIDER_ENVIRONMENT_VARIABLES.includes(k)));
    assert.deepEqual(selected(narrowed), selected(env));
  });
});

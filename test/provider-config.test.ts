import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_ANTHROPIC_BASE_URL,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_BASE_URL,
  DEFAULT_OPENAI_MODEL,
  DEFAULT_OPENROUTER_BASE_URL,
  DEFAULT_OPENROUTER_MODEL,
  describeProvider,
  providerFromEnvironment,
  type ProviderConfig,
} from '../src/shared/provider-config.js';

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
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY']) {
      assert.match(message, new RegExp(name));
    }
  });

  it('treats blank variables as unset', () => {
    refused({ OPENAI_API_KEY: '', OPENROUTER_API_KEY: '   ', ANTHROPIC_API_KEY: '' });
  });

  it('OpenAI key alone: default base URL and model', () => {
    assert.deepEqual(selected({ OPENAI_API_KEY: 'sk-one' }), {
      kind: 'openai',
      baseUrl: DEFAULT_OPENAI_BASE_URL,
      model: DEFAULT_OPENAI_MODEL,
      apiKey: 'sk-one',
    });
  });

  it('OpenAI base URL alone configures a keyless local provider, trailing slashes removed', () => {
    assert.deepEqual(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1/', CHAT_MODEL: 'llama3.2' }), {
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      model: 'llama3.2',
      apiKey: '',
    });
  });

  it('OpenRouter key alone: its base URL and default model, with overrides', () => {
    assert.deepEqual(selected({ OPENROUTER_API_KEY: 'or-key' }), {
      kind: 'openrouter',
      baseUrl: DEFAULT_OPENROUTER_BASE_URL,
      model: DEFAULT_OPENROUTER_MODEL,
      apiKey: 'or-key',
    });
    const custom = selected({ OPENROUTER_API_KEY: 'or-key', OPENROUTER_BASE_URL: 'https://proxy.example/api/v1', CHAT_MODEL: 'x/y' });
    assert.equal(custom.baseUrl, 'https://proxy.example/api/v1');
    assert.equal(custom.model, 'x/y');
  });

  it('Anthropic key alone: ANTHROPIC_MODEL before CHAT_MODEL before the default', () => {
    assert.deepEqual(selected({ ANTHROPIC_API_KEY: 'ak' }), {
      kind: 'anthropic',
      baseUrl: DEFAULT_ANTHROPIC_BASE_URL,
      model: DEFAULT_ANTHROPIC_MODEL,
      apiKey: 'ak',
    });
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', CHAT_MODEL: 'chat-m' }).model, 'chat-m');
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', CHAT_MODEL: 'chat-m', ANTHROPIC_MODEL: 'anth-m' }).model, 'anth-m');
    assert.equal(selected({ ANTHROPIC_API_KEY: 'ak', ANTHROPIC_BASE_URL: 'http://localhost:9999' }).baseUrl, 'http://localhost:9999');
  });

  it('without SYMBI_PROVIDER the first configured one wins: OpenAI, then OpenRouter, then Anthropic', () => {
    const all = { OPENAI_API_KEY: 'a', OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' };
    assert.equal(selected(all).kind, 'openai');
    assert.equal(selected({ OPENROUTER_API_KEY: 'b', ANTHROPIC_API_KEY: 'c' }).kind, 'openrouter');
    assert.equal(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', ANTHROPIC_API_KEY: 'c' }).kind, 'openai');
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
    const message = refused({ SYMBI_PROVIDER: 'gemini', OPENAI_API_KEY: 'a' });
    assert.match(message, /SYMBI_PROVIDER/);
    assert.match(message, /openai, openrouter, anthropic/);
    assert.match(message, /gemini/);
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
    assert.equal(openai, `openai-compatible http://127.0.0.1:4000/v1 model ${DEFAULT_OPENAI_MODEL}`);
    assert.ok(!openai.includes(key));
    assert.equal(describeProvider(selected({ OPENAI_BASE_URL: 'http://127.0.0.1:4000/v1' })), `openai-compatible http://127.0.0.1:4000/v1 model ${DEFAULT_OPENAI_MODEL} (no key)`);
    assert.equal(describeProvider(selected({ ANTHROPIC_API_KEY: key })), `anthropic-messages ${DEFAULT_ANTHROPIC_BASE_URL} model ${DEFAULT_ANTHROPIC_MODEL}`);
    assert.equal(describeProvider(selected({ OPENROUTER_API_KEY: key })), `openrouter ${DEFAULT_OPENROUTER_BASE_URL} model ${DEFAULT_OPENROUTER_MODEL}`);
  });
});

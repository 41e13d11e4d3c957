import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SAMPLE_SCHEMA, ecKeyPair, keyFetchServerEnv, signSchema, type TestKeyPair } from '../support/schemapin-fixtures.js';
import { repoRoot } from '../support/server-entry.js';
import { type RunningServer, startServer } from '../support/server.js';
import { tempDir } from '../support/project.js';
import { selfSignedCertificate } from '../support/tls-certificate.js';

// A SchemaPin pin is keyed by the port the key fetch dials. verify_schema over
// stdio from `symbi mcp` in a network namespace of its own, whose loopback
// serves the key at the default ports (http 80, https 443). After the
// publisher's key is pinned, the key is replaced by an attacker's: every
// spelling of the same dialled port (none, the explicit default) meets the pin
// as a mismatch, and port 0, which Node.js would dial as the default port
// while the URL names another, is refused before any fetch instead of
// starting a fresh pin.

const NEEDS = 'needs root and unshare(1) with a network namespace (binding ports 80 and 443 on its own loopback)';

function namespaceUsable(): string | null {
  if (process.getuid?.() !== 0) return `skipped: ${NEEDS} (not running as root)`;
  try {
    execFileSync('unshare', ['--net', '--', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return null;
  } catch {
    return `skipped: ${NEEDS}, ip(8) and openssl(1)`;
  }
}

interface Report {
  verified: boolean;
  pinned: string | null;
  message: string;
}

describe('SchemaPin pins follow the dialled port, over stdio in a namespace serving keys at ports 80 and 443', () => {
  const skip = namespaceUsable();
  const publisher = ecKeyPair();
  const attacker = ecKeyPair();
  let dir = '';
  let project = '';
  let keyFile = '';
  let server: RunningServer;

  before(async () => {
    if (skip) return;
    dir = tempDir('schemapin-port-');
    project = path.join(dir, 'project');
    fs.mkdirSync(project);
    keyFile = path.join(dir, 'served-key.pem');
    fs.writeFileSync(keyFile, publisher.publicPem);
    selfSignedCertificate(path.join(dir, 'tls.key'), path.join(dir, 'tls.crt'), '/CN=127.0.0.1', 'IP:127.0.0.1');
    server = await startServer(project, {
      launcher: [
        'unshare',
        '--net',
        '--',
        'sh',
        '-c',
        'ip link set lo up && exec "$@"',
        'sh',
        process.execPath,
        '--import',
        'tsx',
        path.join(repoRoot, 'test', 'support', 'netns-default-port-key-servers.ts'),
        keyFile,
        path.join(dir, 'tls.key'),
        path.join(dir, 'tls.crt'),
        '--',
      ],
      cwd: repoRoot,
      env: keyFetchServerEnv(path.join(dir, 'tls.crt'), dir),
    });
  });

  after(async () => {
    if (skip) return;
    await server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function call(url: string, signer: TestKeyPair): Promise<CallToolResult> {
    const args = { schema: JSON.stringify(SAMPLE_SCHEMA), public_key_url: url, signature: signSchema(SAMPLE_SCHEMA, signer.privateKey) };
    return (await server.client.callTool({ name: 'verify_schema', arguments: args })) as CallToolResult;
  }

  async function verify(url: string, signer: TestKeyPair): Promise<Report> {
    const result = await call(url, signer);
    assert.notEqual(result.isError, true, `${url}: ${JSON.stringify(result.content)}; stderr: ${server.stderr()}`);
    return result.structuredContent as unknown as Report;
  }

  function storedHosts(): string[] {
    return Object.keys(JSON.parse(fs.readFileSync(path.join(project, '.symbiont', 'schemapin', 'pins.json'), 'utf8')).pins).sort();
  }

  async function assertPortZeroRefused(url: string): Promise<void> {
    const result = await call(url, attacker);
    assert.equal(result.isError, true, `${url}: ${JSON.stringify(result.content)}`);
    const text = (result.content as Array<{ text: string }>)[0]!.text;
    assert.match(text, /public_key_url names port 0, which cannot be dialled/);
    assert.doesNotMatch(text, /[\r\n]/, 'one line');
  }

  for (const scheme of ['http', 'https'] as const) {
    const defaultPort = scheme === 'http' ? 80 : 443;
    const pinKey = scheme === 'http' ? '127.0.0.1:80' : '127.0.0.1';

    it(`${scheme}: a replaced key is a pin mismatch with or without :${defaultPort}, and port 0 is refused`, { skip: skip ?? false }, async () => {
      fs.writeFileSync(keyFile, publisher.publicPem);
      const first = await verify(`${scheme}://127.0.0.1/key.pem`, publisher);
      assert.equal(first.verified, true, first.message);
      assert.equal(first.pinned, 'new');
      assert.ok(storedHosts().includes(pinKey), JSON.stringify(storedHosts()));

      fs.writeFileSync(keyFile, attacker.publicPem);
      for (const url of [`${scheme}://127.0.0.1/key.pem`, `${scheme}://127.0.0.1:${defaultPort}/key.pem`, `${scheme}://127.0.0.1:0${defaultPort}/key.pem`]) {
        const replaced = await verify(url, attacker);
        assert.equal(replaced.verified, false, `${url}: ${replaced.message}`);
        assert.equal(replaced.pinned, 'mismatch', `${url}: ${replaced.message}`);
        assert.ok(replaced.message.includes(`symbi schemapin unpin ${pinKey}`), replaced.message);
      }
      await assertPortZeroRefused(`${scheme}://127.0.0.1:0/key.pem`);
      await assertPortZeroRefused(`${scheme}://127.0.0.1:00/key.pem`);
      assert.ok(!storedHosts().some((host) => host.endsWith(':0')), JSON.stringify(storedHosts()));
    });
  }
});

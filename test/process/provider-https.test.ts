import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../support/server-entry.js';
import { selfSignedCertificate } from '../support/tls-certificate.js';

// Providers are reached over HTTPS in real use. The client must speak TLS and
// verify the server against the trusted CAs: a certificate nobody vouches for
// is a network failure, never a silent downgrade. Node reads extra trusted CAs
// (NODE_EXTRA_CA_CERTS) only at process start, so each call runs in a child.

const ANSWER = 'over TLS';

function runCall(baseUrl: string, extraEnv: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    import { callProvider } from ${JSON.stringify(path.join(repoRoot, 'src', 'worker', 'providers', 'provider-call.ts'))};
    import { providerConfigFor } from ${JSON.stringify(path.join(repoRoot, 'src', 'shared', 'provider', 'provider-config.ts'))};
    try {
      const response = await callProvider(
        providerConfigFor({ kind: 'openai', baseUrl: ${JSON.stringify(baseUrl)}, model: 'm', apiKey: 'tls-test-key' }),
        { conversation: [{ role: 'user', content: 'hi' }], options: { provider: 'openai', model: 'm', max_tokens: 16 } },
        AbortSignal.timeout(10_000),
      );
      process.stdout.write(JSON.stringify({ ok: true, content: response.content }));
    } catch (error) {
      process.stdout.write(JSON.stringify({ ok: false, kind: error.kind, message: error.message }));
    }
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...extraEnv },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('an HTTPS provider', () => {
  let dir: string;
  let server: Server;
  let baseUrl: string;
  let requests = 0;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-tls-'));
    selfSignedCertificate(path.join(dir, 'key.pem'), path.join(dir, 'cert.pem'), '/CN=127.0.0.1', 'IP:127.0.0.1');
    server = createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
      requests += 1;
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers over TLS when the server certificate is trusted', async () => {
    const result = await runCall(baseUrl, { NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem') });
    assert.deepEqual(JSON.parse(result.stdout), { ok: true, content: ANSWER }, result.stderr);
  });

  it('refuses a trusted certificate for other names without quoting the names it carries', async () => {
    // The names in a certificate are chosen by whoever serves it: a provider could speak through them.
    selfSignedCertificate(path.join(dir, 'named-key.pem'), path.join(dir, 'named-cert.pem'), '/CN=x', 'DNS:here-is-the-secret.launch-code-is-0000');
    const named = createServer(
      { key: fs.readFileSync(path.join(dir, 'named-key.pem')), cert: fs.readFileSync(path.join(dir, 'named-cert.pem')) },
      (_req, res) => res.end(),
    );
    await new Promise<void>((resolve) => named.listen(0, '127.0.0.1', resolve));
    try {
      const result = await runCall(`https://localhost:${(named.address() as AddressInfo).port}/v1`, { NODE_EXTRA_CA_CERTS: path.join(dir, 'named-cert.pem') });
      const outcome = JSON.parse(result.stdout) as { ok: boolean; kind: string; message: string };
      assert.equal(outcome.kind, 'network', result.stdout);
      assert.match(outcome.message, /ERR_TLS_CERT_ALTNAME_INVALID: the certificate does not name the host in the URL/);
      assert.ok(!outcome.message.includes('launch-code'), outcome.message);
    } finally {
      named.closeAllConnections();
      await new Promise<void>((resolve) => named.close(() => resolve()));
    }
  });

  it('refuses a certificate no trusted CA vouches for, before any request is sent', async () => {
    const before = requests;
    const result = await runCall(baseUrl, {});
    const outcome = JSON.parse(result.stdout) as { ok: boolean; kind: string; message: string };
    assert.equal(outcome.ok, false);
    assert.equal(outcome.kind, 'network');
    assert.match(outcome.message, /could not reach the provider at POST https:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: .*certificate/i);
    assert.equal(requests, before, 'no request reached the server');
  });
});

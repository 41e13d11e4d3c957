import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createProxy, type ProxyServer } from 'proxy';
import { startSyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { auditOf, startServer, textOf } from '../support/server.js';
import { selfSignedCertificate } from '../support/tls-certificate.js';

// Users behind a corporate proxy set HTTPS_PROXY. Here a real CONNECT proxy (the `proxy` package, a
// small Squid-like server) listens on 127.0.0.1, the provider is an HTTPS server with its own
// certificate, and `symbi mcp` must tunnel its request through the proxy, unless NO_PROXY names the
// provider's host.

const ANSWER = 'answered through the tunnel';
const PROXY_PASSWORD = 'proxy-pa55word-never-shown';

describe('provider requests through an HTTP CONNECT proxy', () => {
  let dir: string;
  let project: string;
  let provider: Server;
  let providerPort: number;
  let proxy: ProxyServer;
  let proxyUrl: string;
  const connects: string[] = [];
  const forwarded: string[] = [];
  const providerRequests: IncomingHttpHeaders[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-proxy-'));
    selfSignedCertificate(path.join(dir, 'key.pem'), path.join(dir, 'cert.pem'), '/CN=127.0.0.1', 'IP:127.0.0.1');
    provider = createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
      providerRequests.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }] }));
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    providerPort = (provider.address() as AddressInfo).port;

    proxy = createProxy();
    proxy.on('connect', (req) => connects.push(String(req.url)));
    proxy.on('request', (req) => forwarded.push(String(req.url)));
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

    project = makeProject({ 'agents/assistant.symbi': 'agent assistant {}\n' });
  });

  after(async () => {
    provider.closeAllConnections();
    proxy.closeAllConnections();
    await new Promise<void>((resolve) => provider.close(() => resolve()));
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    removeProject(project);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string>): Record<string, string> => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: os.tmpdir(),
    NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem'),
    OPENAI_BASE_URL: `https://127.0.0.1:${providerPort}/v1`,
    OPENAI_API_KEY: 'sk-proxy-test-key',
    CHAT_MODEL: 'm',
    ...extra,
  });

  async function invokeWith(extra: Record<string, string>): Promise<{ result: unknown; stderr: string }> {
    const server = await startServer(project, { env: env(extra) });
    try {
      const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
      return { result, stderr: server.stderr() };
    } finally {
      await server.close();
    }
  }

  // The certificate names only IP:127.0.0.1: through the tunnel it must be checked against that
  // address (https-proxy-agent sends no server name for an IP, and Node would check "localhost").
  for (const [variable, host] of [
    ['HTTPS_PROXY', '127.0.0.1'],
    ['https_proxy', '127.0.0.1'],
  ] as const) {
    it(`tunnels the request to ${host} through the proxy named by ${variable}`, async () => {
      const connectsBefore = connects.length;
      const requestsBefore = providerRequests.length;
      const { result } = await invokeWith({ [variable]: proxyUrl, OPENAI_BASE_URL: `https://${host}:${providerPort}/v1` });
      assert.equal((result as { isError?: boolean }).isError, undefined, textOf(result));
      assert.equal(textOf(result), ANSWER);
      const providerHost = `${host}:${providerPort}`;
      assert.deepEqual(connects.slice(connectsBefore), [providerHost], 'one CONNECT to the provider');
      assert.equal(providerRequests.length, requestsBefore + 1);
      assert.match(String(providerRequests.at(-1)!['user-agent']), /^symbi-mcp\//);
    });
  }

  it('sends a plain-http provider request through the proxy named by HTTP_PROXY', async () => {
    const endpoint = await startSyntheticEndpoint();
    try {
      const { result } = await invokeWith({ HTTP_PROXY: proxyUrl, OPENAI_BASE_URL: endpoint.url });
      assert.equal(textOf(result), 'Hello from the synthetic endpoint.');
      assert.deepEqual(forwarded, [`${endpoint.url}/chat/completions`]);
      assert.match(String(endpoint.requests[0]!.headers['user-agent']), /^symbi-mcp\//);
    } finally {
      await endpoint.close();
    }
  });

  it('goes direct when NO_PROXY names the provider host', async () => {
    const connectsBefore = connects.length;
    const { result } = await invokeWith({ HTTPS_PROXY: proxyUrl, NO_PROXY: '127.0.0.1,localhost' });
    assert.equal(textOf(result), ANSWER);
    assert.equal(connects.length, connectsBefore, 'the proxy saw nothing');
  });

  it('an unreachable proxy is a one-line error naming the variable, never its credentials', async () => {
    const closed = createProxy();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { result, stderr } = await invokeWith({ HTTPS_PROXY: `http://user:${PROXY_PASSWORD}@127.0.0.1:${port}` });
    assert.equal((result as { isError?: boolean }).isError, true);
    const text = textOf(result);
    assert.match(
      text,
      /could not reach the provider at POST https:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions through the proxy in HTTPS_PROXY: .*ECONNREFUSED/,
    );
    assert.ok(!text.includes(PROXY_PASSWORD));
    assert.ok(!stderr.includes(PROXY_PASSWORD));
    assert.ok(!fs.readFileSync(auditOf(result).audit.path, 'utf8').includes(PROXY_PASSWORD));
  });
});

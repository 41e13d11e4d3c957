import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SAMPLE_SCHEMA, ecKeyPair, keyFetchServerEnv, signSchema } from '../support/schemapin-fixtures.js';
import { repoRoot } from '../support/server-entry.js';
import { type RunningServer, startServer } from '../support/server.js';
import { tempDir } from '../support/project.js';
import { selfSignedCertificate } from '../support/tls-certificate.js';

// verify_schema through `symbi mcp` over stdio, with the server in a network
// namespace of its own: only loopback is up, /etc/hosts names hosts whose
// only address is on a network with no route (IPv4, and IPv6 only), and the
// one DNS server is a closed loopback port. Key servers inside the namespace
// reset, stay silent, cut the body short or present a certificate for another
// name. Every way the fetch fails must come back as verified: false with one
// line saying why, and the server must keep serving: before the fix, a host
// whose address failed to connect at once ended the whole process.

const NEEDS = 'needs root and unshare(1) with network and mount namespaces';

function namespacesUsable(): string | null {
  if (process.getuid?.() !== 0) return `skipped: ${NEEDS} (not running as root)`;
  try {
    execFileSync('unshare', ['--net', '--mount', '--', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return null;
  } catch {
    return `skipped: ${NEEDS}, ip(8) and openssl(1)`;
  }
}

const ENTER_NAMESPACE = ['set -e', 'mount --bind "$1" /etc/hosts', 'mount --bind "$2" /etc/resolv.conf', 'ip link set lo up', 'shift 2', 'exec "$@"'].join(
  '\n',
);

describe('verify_schema key fetches that fail, over stdio in a namespace with only loopback', () => {
  const skip = namespacesUsable();
  const key = ecKeyPair();
  const schema = JSON.stringify(SAMPLE_SCHEMA);
  const signature = signSchema(SAMPLE_SCHEMA, key.privateKey);
  let dir = '';
  let server: RunningServer;
  let ports: Record<'good' | 'reset' | 'silent' | 'cut' | 'closed', number>;

  before(async () => {
    if (skip) return;
    dir = tempDir('schemapin-netns-');
    const project = path.join(dir, 'project');
    fs.mkdirSync(project);
    const file = (name: string, text: string) => {
      fs.writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const hosts = file(
      'hosts',
      [
        '127.0.0.1 localhost keys.test wrong-name.test',
        '10.20.30.40 keys-v4.test', // private range, allowed by the test switch, no route in the namespace
        'fd00::40 keys-v6.test', // unique-local, the host's only address
        '10.20.30.41 keys-both.test', // two addresses, both without a route
        'fd00::41 keys-both.test',
      ].join('\n') + '\n',
    );
    const resolv = file('resolv.conf', 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
    selfSignedCertificate(path.join(dir, 'tls.key'), path.join(dir, 'tls.crt'), '/CN=keys.test', 'DNS:keys.test,DNS:keys-v4.test,DNS:keys-v6.test');
    const keyPem = file('key.pem', key.publicPem);
    const portsFile = path.join(dir, 'ports.json');
    server = await startServer(project, {
      launcher: [
        'unshare',
        '--net',
        '--mount',
        '--',
        'sh',
        '-c',
        ENTER_NAMESPACE,
        'sh',
        hosts,
        resolv,
        process.execPath,
        '--import',
        'tsx',
        path.join(repoRoot, 'test', 'support', 'netns-key-servers.ts'),
        portsFile,
        path.join(dir, 'tls.key'),
        path.join(dir, 'tls.crt'),
        keyPem,
        '--',
      ],
      cwd: repoRoot,
      env: keyFetchServerEnv(path.join(dir, 'tls.crt'), dir),
    });
    ports = JSON.parse(fs.readFileSync(portsFile, 'utf8'));
  });

  after(async () => {
    if (skip) return;
    await server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function verify(url: string): Promise<{ verified: boolean; message: string }> {
    const result = (await server.client.callTool({ name: 'verify_schema', arguments: { schema, public_key_url: url, signature } })) as CallToolResult;
    assert.notEqual(result.isError, true, `${url}: ${JSON.stringify(result.content)}; stderr: ${server.stderr()}`);
    const report = result.structuredContent as { verified: boolean; message: string };
    assert.equal(typeof report.message, 'string');
    // oxlint-disable-next-line no-control-regex -- checking for control characters is the point
    assert.doesNotMatch(report.message, /[\r\n\u0000-\u001f]/, 'the reason is one line');
    return report;
  }

  it('answers verified: false with the reason for every failing fetch, and keeps serving', { skip: skip ?? false }, async () => {
    const cases: Array<{ what: string; url: string; reason: RegExp }> = [
      { what: 'https, the only IPv4 address unreachable', url: 'https://keys-v4.test/key.pem', reason: /could not fetch the key URL: connect ENETUNREACH / },
      {
        what: 'https, the only address IPv6 and unreachable',
        url: 'https://keys-v6.test/key.pem',
        reason: /could not fetch the key URL: connect ENETUNREACH /,
      },
      { what: 'http, unreachable', url: 'http://keys-v4.test/key.pem', reason: /could not fetch the key URL: connect ENETUNREACH / },
      {
        what: 'https, an IPv4 and an IPv6 address, neither reachable',
        url: 'https://keys-both.test/key.pem',
        reason: /could not fetch the key URL: connect ENETUNREACH /,
      },
      { what: 'name resolution fails', url: 'https://nowhere.test/key.pem', reason: /could not resolve the key URL's host nowhere\.test/ },
      {
        what: 'connection refused',
        url: `https://keys.test:${ports.closed}/key.pem`,
        reason: /could not fetch the key URL: connect ECONNREFUSED 127\.0\.0\.1:/,
      },
      {
        what: 'certificate for another name',
        url: `https://wrong-name.test:${ports.good}/key.pem`,
        reason: /could not fetch the key URL: ERR_TLS_CERT_ALTNAME_INVALID/,
      },
      { what: 'reset during the handshake', url: `https://keys.test:${ports.reset}/key.pem`, reason: /could not fetch the key URL: .*ECONNRESET/ },
      { what: 'body cut short', url: `https://keys.test:${ports.cut}/key.pem`, reason: /closed before the body was complete/ },
      { what: 'silence until the deadline', url: `https://keys.test:${ports.silent}/key.pem`, reason: /took longer than 10 s/ },
    ];
    const reports = await Promise.all(cases.map((c) => verify(c.url)));
    cases.forEach((c, i) => {
      assert.equal(reports[i]!.verified, false, c.what);
      assert.match(reports[i]!.message, c.reason, `${c.what}: ${reports[i]!.message}`);
    });

    // Still the same process, and a working key host still verifies.
    const good = await verify(`https://keys.test:${ports.good}/key.pem`);
    assert.equal(good.verified, true, good.message);
    assert.doesNotMatch(server.stderr(), /TypeError|Unhandled|uncaught/i);
  });
});

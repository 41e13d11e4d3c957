import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { canonicalJson, sha256Hex } from '../../src/shared/canonical-json.js';
import { SCHEMA_KEY_BODY_MAX_BYTES } from '../../src/shared/limits.js';
import { PinStore } from '../../src/shared/schemapin/pin-store.js';
import { verifySchema, type VerifySchemaOptions } from '../../src/shared/schemapin/verify-schema.js';
import {
  SAMPLE_SCHEMA,
  ecKeyPair,
  signSchema,
  startKeyServer,
  tempProject,
  type KeyServer,
  type TempProject,
  type TestKeyPair,
} from '../support/schemapin-fixtures.js';
import { selfSignedCertificate } from '../support/tls-certificate.js';

// verify_schema's core against a real HTTP server on 127.0.0.1, with the
// insecure testing switch passed explicitly (never through process.env).

describe('SchemaPin verification against a local key server', () => {
  let server: KeyServer;
  let temp: TempProject;
  let key: TestKeyPair;
  let options: VerifySchemaOptions;
  const schemaText = JSON.stringify(SAMPLE_SCHEMA);
  let signature: string;

  before(async () => {
    server = await startKeyServer();
    temp = tempProject();
    key = ecKeyPair();
    signature = signSchema(SAMPLE_SCHEMA, key.privateKey);
    server.serve('/key.pem', { body: key.publicPem, headers: { 'content-type': 'application/x-pem-file' } });
    options = { project: temp.project, allowInsecure: true };
  });
  after(async () => {
    await server.close();
    temp.remove();
  });

  it('verifies a valid signature given as an argument, pins the key, then matches the pin', async () => {
    const first = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, options);
    assert.equal(first.verified, true, first.message);
    assert.equal(first.pinned, 'new');
    assert.equal(first.key_fingerprint, key.fingerprint);
    assert.deepEqual(first.signature, { algorithm: 'ECDSA_P256', valid: true });
    assert.equal(first.schema_hash, sha256Hex(canonicalJson(SAMPLE_SCHEMA)));
    assert.equal(first.public_key_url, server.url('/key.pem'));
    assert.ok(!Number.isNaN(Date.parse(first.timestamp)));

    const second = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, options);
    assert.equal(second.verified, true);
    assert.equal(second.pinned, 'matched');

    const stat = fs.statSync(temp.pinsFile);
    assert.equal(stat.mode & 0o777, 0o600);
    const pins = JSON.parse(fs.readFileSync(temp.pinsFile, 'utf8'));
    assert.equal(pins.version, 1);
    assert.equal(pins.pins[`127.0.0.1:${server.port}`].fingerprint, key.fingerprint);
    assert.ok(!Number.isNaN(Date.parse(pins.pins[`127.0.0.1:${server.port}`].first_seen)));
  });

  it("verifies a signature carried in the schema's top-level signature field (verified with the field removed)", async () => {
    const withField = JSON.stringify({ ...SAMPLE_SCHEMA, signature });
    const result = await verifySchema({ schema: withField, public_key_url: server.url('/key.pem') }, options);
    assert.equal(result.verified, true, result.message);
    assert.equal(result.schema_hash, sha256Hex(canonicalJson(SAMPLE_SCHEMA)));
  });

  it('refuses a signature given both ways when the two differ', async () => {
    const other = signSchema({ ...SAMPLE_SCHEMA, name: 'x' }, key.privateKey);
    await assert.rejects(
      verifySchema({ schema: JSON.stringify({ ...SAMPLE_SCHEMA, signature: other }), public_key_url: server.url('/key.pem'), signature }, options),
      /both as an argument and in the schema's "signature" field/,
    );
  });

  it('fails a schema changed by one character', async () => {
    const changed = schemaText.replace('Reads a file', 'Reads a filE');
    assert.notEqual(changed, schemaText);
    const result = await verifySchema({ schema: changed, public_key_url: server.url('/key.pem'), signature }, options);
    assert.equal(result.verified, false);
    assert.equal(result.signature.valid, false);
    assert.equal(result.key_fingerprint, key.fingerprint);
    assert.match(result.message, /signature does not match this schema/);
  });

  it('still verifies after key order and white space changes', async () => {
    const reordered = {
      inputSchema: { required: ['path'], properties: { path: { description: 'relative path', type: 'string' } }, type: 'object' },
      description: SAMPLE_SCHEMA.description,
      name: SAMPLE_SCHEMA.name,
    };
    const text = JSON.stringify(reordered, null, 4).replace(/\n/g, '\r\n  ');
    const result = await verifySchema({ schema: text, public_key_url: server.url('/key.pem'), signature }, options);
    assert.equal(result.verified, true, result.message);
  });

  it('fails an unsigned schema closed without fetching anything', async () => {
    const before = server.requests.length;
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem') }, options);
    assert.equal(result.verified, false);
    assert.match(result.message, /unsigned/);
    assert.equal(result.key_fingerprint, null);
    assert.equal(result.signature.valid, false);
    assert.equal(server.requests.length, before);
  });

  it('accepts the JSON key document form and honours revoked_keys', async () => {
    // Another key from the same host would meet the shared project's pin, so this test has its own project.
    const project = tempProject();
    try {
      const opts = { ...options, project: project.project };
      const fresh = ecKeyPair();
      const sig = signSchema(SAMPLE_SCHEMA, fresh.privateKey);
      const retired = ecKeyPair();
      server.serve('/doc-ok/schemapin.json', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ schema_version: '1.1', public_key_pem: fresh.publicPem, revoked_keys: [retired.fingerprint] }),
      });
      const ok = await verifySchema({ schema: schemaText, public_key_url: server.url('/doc-ok/schemapin.json'), signature: sig }, opts);
      assert.equal(ok.verified, true, ok.message);

      server.serve('/doc-revoked/schemapin.json', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ public_key_pem: fresh.publicPem, revoked_keys: ['SHA256:' + fresh.fingerprint.slice(7).toUpperCase()] }),
      });
      const revoked = await verifySchema({ schema: schemaText, public_key_url: server.url('/doc-revoked/schemapin.json'), signature: sig }, opts);
      assert.equal(revoked.verified, false);
      assert.match(revoked.message, /revoked_keys/);
      assert.equal(revoked.key_fingerprint, fresh.fingerprint);

      server.serve('/doc-bad/schemapin.json', { body: JSON.stringify({ public_key_pem: fresh.publicPem, revoked_keys: ['md5:abc'] }) });
      const unreadable = await verifySchema({ schema: schemaText, public_key_url: server.url('/doc-bad/schemapin.json'), signature: sig }, opts);
      assert.equal(unreadable.verified, false);
      assert.match(unreadable.message, /revoked_keys\[0\] is not a "sha256:<64 hex digits>" fingerprint/);
    } finally {
      project.remove();
    }
  });

  it('refuses a PEM private key served by mistake', async () => {
    server.serve('/private.pem', { body: key.privatePem });
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/private.pem'), signature }, options);
    assert.equal(result.verified, false);
    assert.match(result.message, /is a PRIVATE key; publish only the public key/);
    assert.equal(result.key_fingerprint, null);
  });

  it('refuses an RSA key', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    server.serve('/rsa.pem', { body: rsa.publicKey.export({ type: 'spki', format: 'pem' }) });
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/rsa.pem'), signature }, options);
    assert.equal(result.verified, false);
    assert.match(result.message, /is an RSA key; SchemaPin keys are ECDSA P-256/);
  });

  it('refuses an EC key on another curve', async () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
    server.serve('/p384.pem', { body: p384.publicKey.export({ type: 'spki', format: 'pem' }) });
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/p384.pem'), signature }, options);
    assert.equal(result.verified, false);
    assert.match(result.message, /curve secp384r1/);
  });

  it('refuses an HTML error page, garbage and a non-200 status with clear messages', async () => {
    server.serve('/html', { headers: { 'content-type': 'text/html' }, body: '<!DOCTYPE html><html><body><h1>Oops</h1></body></html>' });
    const html = await verifySchema({ schema: schemaText, public_key_url: server.url('/html'), signature }, options);
    assert.match(html.message, /HTML page/);

    server.serve('/garbage', { body: 'hello there' });
    const garbage = await verifySchema({ schema: schemaText, public_key_url: server.url('/garbage'), signature }, options);
    assert.match(garbage.message, /not a PEM public key/);

    const missing = await verifySchema({ schema: schemaText, public_key_url: server.url('/nothing-here'), signature }, options);
    assert.match(missing.message, /answered HTTP 404/);
    for (const r of [html, garbage, missing]) {
      assert.equal(r.verified, false);
      assert.equal(r.message.includes('\n'), false);
    }
  });

  it('does not follow a redirect', async () => {
    server.serve('/moved', { status: 302, headers: { location: server.url('/key.pem') } });
    const before = server.requests.length;
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/moved'), signature }, options);
    assert.equal(result.verified, false);
    assert.match(result.message, /HTTP 302 \(a redirect to .*\/key\.pem\); redirects are not followed/);
    assert.deepEqual(
      server.requests.slice(before).map((r) => r.path),
      ['/moved'],
    );
  });

  it('accepts a key body of exactly 64 KiB and refuses one byte more (declared and streamed)', async () => {
    const exact = key.publicPem + ' '.repeat(SCHEMA_KEY_BODY_MAX_BYTES - Buffer.byteLength(key.publicPem));
    assert.equal(Buffer.byteLength(exact), SCHEMA_KEY_BODY_MAX_BYTES);
    server.serve('/exact.pem', { body: exact });
    const fits = await verifySchema({ schema: schemaText, public_key_url: server.url('/exact.pem'), signature }, options);
    assert.equal(fits.verified, true, fits.message);

    server.serve('/big.pem', { body: exact + ' ' });
    const declared = await verifySchema({ schema: schemaText, public_key_url: server.url('/big.pem'), signature }, options);
    assert.equal(declared.verified, false);
    assert.match(declared.message, /65537 bytes; the limit is 65536 bytes/);

    // No Content-Length: the cap must hold while streaming.
    server.serve('/streamed.pem', {
      handle: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16 * 1024, 0x20);
        let sent = 0;
        const push = () => {
          while (sent < 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', push);
              return;
            }
          }
          res.end();
        };
        res.on('error', () => undefined);
        push();
      },
    });
    const streamed = await verifySchema({ schema: schemaText, public_key_url: server.url('/streamed.pem'), signature }, options);
    assert.equal(streamed.verified, false);
    assert.match(streamed.message, /larger than the limit of 65536 bytes/);
  });

  it('gives up on a key server that never answers, within the deadline it was given', async () => {
    server.serve('/silent', { handle: () => undefined });
    const result = await verifySchema({ schema: schemaText, public_key_url: server.url('/silent'), signature }, { ...options, timeoutMs: 300 });
    assert.equal(result.verified, false);
    assert.match(result.message, /took longer than 0.3 s/);
  });

  it('fails when a pinned host serves a different key, names both fingerprints, and recovers after unpin', async () => {
    const project = tempProject();
    try {
      const opts = { ...options, project: project.project };
      const rotated = ecKeyPair();
      server.serve('/rotating.pem', { body: key.publicPem });
      const first = await verifySchema({ schema: schemaText, public_key_url: server.url('/rotating.pem'), signature }, opts);
      assert.equal(first.pinned, 'new');

      server.serve('/rotating.pem', { body: rotated.publicPem });
      const rotatedSig = signSchema(SAMPLE_SCHEMA, rotated.privateKey);
      // Same host, another path: the pin is per host.
      const mismatch = await verifySchema({ schema: schemaText, public_key_url: server.url('/rotating.pem'), signature: rotatedSig }, opts);
      assert.equal(mismatch.verified, false);
      assert.equal(mismatch.pinned, 'mismatch');
      assert.equal(mismatch.signature.valid, true);
      assert.equal(mismatch.key_fingerprint, rotated.fingerprint);
      assert.ok(mismatch.message.includes(rotated.fingerprint));
      assert.ok(mismatch.message.includes(key.fingerprint));
      assert.ok(mismatch.message.includes(`symbi schemapin unpin 127.0.0.1:${server.port}`));

      const removed = new PinStore(project.project).unpin(`127.0.0.1:${server.port}`);
      assert.equal(removed?.fingerprint, key.fingerprint);
      const after = await verifySchema({ schema: schemaText, public_key_url: server.url('/rotating.pem'), signature: rotatedSig }, opts);
      assert.equal(after.verified, true, after.message);
      assert.equal(after.pinned, 'new');
    } finally {
      project.remove();
    }
  });

  it('does not pin a key whose signature failed', async () => {
    const project = tempProject();
    try {
      const wrong = signSchema({ other: true }, key.privateKey);
      const result = await verifySchema(
        { schema: schemaText, public_key_url: server.url('/key.pem'), signature: wrong },
        { ...options, project: project.project },
      );
      assert.equal(result.verified, false);
      assert.equal(result.pinned, null);
      assert.equal(fs.existsSync(project.pinsFile), false);
    } finally {
      project.remove();
    }
  });

  it('refuses a pins.json that is a symlink, and a damaged one, failing closed', async () => {
    const project = tempProject();
    try {
      const opts = { ...options, project: project.project };
      await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, opts);
      const elsewhere = path.join(project.dir, 'elsewhere.json');
      fs.renameSync(project.pinsFile, elsewhere);
      fs.symlinkSync(elsewhere, project.pinsFile);
      const viaLink = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, opts);
      assert.equal(viaLink.verified, false);
      assert.match(viaLink.message, /pin store refused: .*symlink/);

      fs.unlinkSync(project.pinsFile);
      fs.writeFileSync(project.pinsFile, '{"version":1,"pins":{"h":{"fingerprint":"md5:1"}}}', { mode: 0o600 });
      const damaged = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, opts);
      assert.equal(damaged.verified, false);
      assert.match(damaged.message, /is damaged/);

      fs.writeFileSync(project.pinsFile, '{"version":1,"pins":{}}');
      fs.chmodSync(project.pinsFile, 0o644);
      const open = await verifySchema({ schema: schemaText, public_key_url: server.url('/key.pem'), signature }, opts);
      assert.equal(open.verified, false);
      assert.match(open.message, /mode 0600/);
    } finally {
      project.remove();
    }
  });

  it('connects over https to the address it checked, keeping the host name for TLS and Host', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemapin-tls-'));
    try {
      const hostName = 'keys.schemapin.test';
      try {
        selfSignedCertificate(path.join(dir, 'tls.key'), path.join(dir, 'tls.crt'), `/CN=${hostName}`, `DNS:${hostName}`);
      } catch {
        t.skip('openssl is not available to make a test certificate');
        return;
      }
      const cert = fs.readFileSync(path.join(dir, 'tls.crt'));
      const seen: Array<string | undefined> = [];
      const tls = https.createServer({ key: fs.readFileSync(path.join(dir, 'tls.key')), cert }, (req, res) => {
        seen.push(req.headers.host);
        res.end(key.publicPem);
      });
      await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
      const port = (tls.address() as AddressInfo).port;
      const lookups: string[] = [];
      try {
        const result = await verifySchema(
          { schema: schemaText, public_key_url: `https://${hostName}:${port}/key.pem`, signature },
          {
            ...options,
            ca: cert,
            resolveHost: async (name) => {
              lookups.push(name);
              return [{ address: '127.0.0.1', family: 4 }];
            },
          },
        );
        assert.equal(result.verified, true, result.message);
        assert.deepEqual(lookups, [hostName]);
        assert.deepEqual(seen, [`${hostName}:${port}`]);

        // Without the CA the certificate is not trusted.
        const untrusted = await verifySchema(
          { schema: schemaText, public_key_url: `https://${hostName}:${port}/key.pem`, signature },
          { ...options, resolveHost: async () => [{ address: '127.0.0.1', family: 4 }] },
        );
        assert.equal(untrusted.verified, false);
        assert.match(untrusted.message, /could not fetch the key URL/);
      } finally {
        tls.closeAllConnections();
        await new Promise<void>((resolve) => tls.close(() => resolve()));
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

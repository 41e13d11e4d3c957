import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
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

// One key, one fingerprint: a P-256 key served as a compressed-point (0x02/0x03) or hybrid
// (0x06/0x07) SubjectPublicKeyInfo has the fingerprint of its standard uncompressed SPKI, so
// revocation and pins cannot be dodged by re-encoding the same point.

const SPKI_P256_HEADER = Buffer.from('301306072a8648ce3d020106082a8648ce3d030107', 'hex');

/** The SPKI PEM of `key`'s point in the compressed (0x02/0x03 + X) or hybrid (0x06/0x07 + X + Y) encoding. */
function reEncodedPem(key: TestKeyPair, form: 'compressed' | 'hybrid'): { pem: string; encodingFingerprint: string } {
  const der = Buffer.from(key.publicPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
  const point = der.subarray(der.length - 65);
  assert.equal(point[0], 0x04, 'the fixture key is uncompressed');
  const odd = point[64]! & 1;
  const encoded =
    form === 'compressed' ? Buffer.concat([Buffer.from([0x02 + odd]), point.subarray(1, 33)]) : Buffer.concat([Buffer.from([0x06 + odd]), point.subarray(1)]);
  const bitString = Buffer.concat([Buffer.from([0x03, encoded.length + 1, 0x00]), encoded]);
  const body = Buffer.concat([SPKI_P256_HEADER, bitString]);
  const spki = Buffer.concat([Buffer.from([0x30, body.length]), body]);
  return {
    pem: `-----BEGIN PUBLIC KEY-----\n${spki.toString('base64')}\n-----END PUBLIC KEY-----\n`,
    encodingFingerprint: 'sha256:' + createHash('sha256').update(spki).digest('hex'),
  };
}

describe('SchemaPin fingerprints are of the key, not of its encoding', () => {
  let server: KeyServer;
  const schemaText = JSON.stringify(SAMPLE_SCHEMA);
  const projects: TempProject[] = [];

  function options(): VerifySchemaOptions {
    const temp = tempProject();
    projects.push(temp);
    return { project: temp.project, allowInsecure: true };
  }

  before(async () => {
    server = await startKeyServer();
  });
  after(async () => {
    await server.close();
    for (const p of projects) p.remove();
  });

  for (const form of ['compressed', 'hybrid'] as const) {
    it(`a key served ${form} has its standard fingerprint and verifies`, async () => {
      const key = ecKeyPair();
      const { pem, encodingFingerprint } = reEncodedPem(key, form);
      assert.notEqual(encodingFingerprint, key.fingerprint);
      server.serve(`/${form}/key.pem`, { body: pem });
      const result = await verifySchema(
        { schema: schemaText, public_key_url: server.url(`/${form}/key.pem`), signature: signSchema(SAMPLE_SCHEMA, key.privateKey) },
        options(),
      );
      assert.equal(result.verified, true, result.message);
      assert.equal(result.key_fingerprint, key.fingerprint);
    });

    it(`a key revoked by its standard fingerprint stays revoked when served ${form}`, async () => {
      const key = ecKeyPair();
      const { pem } = reEncodedPem(key, form);
      server.serve(`/${form}-revoked/schemapin.json`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ public_key_pem: pem, revoked_keys: [key.fingerprint] }),
      });
      const result = await verifySchema(
        { schema: schemaText, public_key_url: server.url(`/${form}-revoked/schemapin.json`), signature: signSchema(SAMPLE_SCHEMA, key.privateKey) },
        options(),
      );
      assert.equal(result.verified, false);
      assert.equal(result.key_fingerprint, key.fingerprint);
      assert.match(result.message, new RegExp(`the key ${key.fingerprint} from .* is listed in its key document's revoked_keys`));
    });

    it(`a pinned key re-encoded ${form} is the same pin, both ways round`, async () => {
      const key = ecKeyPair();
      const signature = signSchema(SAMPLE_SCHEMA, key.privateKey);
      const { pem } = reEncodedPem(key, form);
      const opts = options();
      // One path serves the key in turn in each encoding: the pin is per host, so the same host must see both.
      const url = server.url(`/${form}-pinned/key.pem`);
      server.serve(`/${form}-pinned/key.pem`, { body: key.publicPem });
      const first = await verifySchema({ schema: schemaText, public_key_url: url, signature }, opts);
      assert.equal(first.verified, true, first.message);
      assert.equal(first.pinned, 'new');
      server.serve(`/${form}-pinned/key.pem`, { body: pem });
      const reEncoded = await verifySchema({ schema: schemaText, public_key_url: url, signature }, opts);
      assert.equal(reEncoded.verified, true, reEncoded.message);
      assert.equal(reEncoded.pinned, 'matched');
      assert.equal(reEncoded.key_fingerprint, key.fingerprint);

      // Pinned from the re-encoded form first, then served standard: still one pin.
      const other = ecKeyPair();
      const otherSig = signSchema(SAMPLE_SCHEMA, other.privateKey);
      const opts2 = options();
      server.serve(`/${form}-pinned/key.pem`, { body: reEncodedPem(other, form).pem });
      const pinnedEncoded = await verifySchema({ schema: schemaText, public_key_url: url, signature: otherSig }, opts2);
      assert.equal(pinnedEncoded.pinned, 'new', pinnedEncoded.message);
      assert.equal(pinnedEncoded.key_fingerprint, other.fingerprint);
      server.serve(`/${form}-pinned/key.pem`, { body: other.publicPem });
      const standard = await verifySchema({ schema: schemaText, public_key_url: url, signature: otherSig }, opts2);
      assert.equal(standard.verified, true, standard.message);
      assert.equal(standard.pinned, 'matched');
    });
  }
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCHEMA_KEY_URL_MAX_BYTES, SCHEMA_MAX_BYTES } from '../../src/shared/limits.js';
import { classifyAddress, judgeAddress } from '../../src/shared/schemapin/address-policy.js';
import { SchemaPinInputError } from '../../src/shared/schemapin/schemapin-errors.js';
import { verifySchema, type VerifySchemaOptions } from '../../src/shared/schemapin/verify-schema.js';
import { SAMPLE_SCHEMA, ecKeyPair, signSchema, startKeyServer, tempProject, type KeyServer, type TempProject } from '../support/schemapin-fixtures.js';

// What the key fetch refuses without the insecure testing switch, the size
// limits checked before any parsing or network access, and the address
// classifier behind the refusals.

describe('key URL refusals without the insecure switch', () => {
  let temp: TempProject;
  let server: KeyServer;
  let options: VerifySchemaOptions;
  const key = ecKeyPair();
  const signature = signSchema(SAMPLE_SCHEMA, key.privateKey);
  const schema = JSON.stringify(SAMPLE_SCHEMA);

  before(async () => {
    temp = tempProject();
    server = await startKeyServer();
    server.serve('/key.pem', { body: key.publicPem });
    options = { project: temp.project, allowInsecure: false };
  });
  after(async () => {
    await server.close();
    temp.remove();
  });

  const refused = async (url: string, pattern: RegExp, extra: Partial<VerifySchemaOptions> = {}) => {
    const result = await verifySchema({ schema, public_key_url: url, signature }, { ...options, ...extra });
    assert.equal(result.verified, false, `${url} must not verify`);
    assert.equal(result.key_fingerprint, null);
    assert.equal(result.pinned, null);
    assert.match(result.message, pattern);
    assert.equal(result.message.includes('\n'), false);
    return result;
  };

  it('refuses plain http:// even to a working server, without contacting it', async () => {
    await refused(server.url('/key.pem'), /plain http:\/\/ key URLs are not fetched; use https:\/\/ \(SYMBIONT_SCHEMAPIN_ALLOW_INSECURE=1/);
    await refused('http://example.com/key.pem', /plain http:\/\//);
    assert.equal(server.requests.length, 0);
  });

  it('refuses loopback, link-local metadata, private and IPv4-mapped addresses given literally', async () => {
    await refused(`https://127.0.0.1:${server.port}/key.pem`, /address 127\.0\.0\.1 is a loopback address; key URLs must reach a public address/);
    await refused('https://[::1]/key.pem', /address ::1 is a loopback address/);
    await refused('https://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a cloud metadata address/);
    await refused('https://10.0.0.1/key.pem', /10\.0\.0\.1 is a private address/);
    await refused('https://[::ffff:127.0.0.1]/key.pem', /::ffff:7f00:1 is a loopback address/);
    await refused('https://0x7f.1/key.pem', /127\.0\.0\.1 is a loopback address/);
    await refused('https://0.0.0.0/key.pem', /unspecified address/);
    await refused('https://[fd00:ec2::254]/', /cloud metadata address/);
    await refused('https://100.100.100.200/', /cloud metadata address/);
    assert.equal(server.requests.length, 0);
  });

  it('refuses localhost after resolving it', async () => {
    await refused('https://localhost/key.pem', /host localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/);
  });

  it('checks every resolved address: one private answer among public ones is refused', async () => {
    const resolveHost = async () => [
      { address: '93.184.216.34', family: 4 as const },
      { address: '192.168.1.10', family: 4 as const },
    ];
    await refused('https://keys.example.test/key.pem', /resolves to 192\.168\.1\.10, which is a private address/, { resolveHost });
    const mapped = async () => [{ address: '::ffff:169.254.169.254', family: 6 as const }];
    await refused('https://keys.example.test/key.pem', /cloud metadata address/, { resolveHost: mapped });
    const nat64 = async () => [{ address: '64:ff9b::a00:1', family: 6 as const }];
    await refused('https://keys.example.test/key.pem', /private address/, { resolveHost: nat64 });
  });

  it('reports a host that does not resolve', async () => {
    const resolveHost = async () => {
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    await refused('https://nowhere.example.test/key.pem', /could not resolve the key URL's host nowhere\.example\.test \(ENOTFOUND\)/, { resolveHost });
  });

  it('never contacts metadata, multicast or unspecified addresses, even with the switch', async () => {
    const insecure = { allowInsecure: true };
    await refused('http://169.254.169.254/', /cloud metadata address; this kind is never contacted/, insecure);
    await refused('http://224.0.0.1/', /multicast address/, insecure);
    await refused('http://[::]/', /unspecified address/, insecure);
    await refused('http://255.255.255.255/', /broadcast address/, insecure);
  });

  it('checks the key URL length before any network access: 8 KiB passes the check, one byte more is an input error', async () => {
    const base = 'https://127.0.0.1/';
    const exact = base + 'a'.repeat(SCHEMA_KEY_URL_MAX_BYTES - base.length);
    assert.equal(Buffer.byteLength(exact), SCHEMA_KEY_URL_MAX_BYTES);
    await refused(exact, /loopback address/);
    await assert.rejects(
      verifySchema({ schema, public_key_url: exact + 'a', signature }, options),
      (err: unknown) => err instanceof SchemaPinInputError && /public_key_url is 8193 bytes; the limit is 8192 bytes/.test(err.message),
    );
  });

  it('refuses unusable key URLs as input errors', async () => {
    for (const [url, pattern] of [
      ['not a url', /not an absolute URL/],
      ['file:///etc/passwd', /uses file:; only https:\/\/ key URLs are fetched/],
      ['https://user:pw@example.com/key.pem', /must not carry credentials/],
    ] as const) {
      await assert.rejects(
        verifySchema({ schema, public_key_url: url, signature }, options),
        (err: unknown) => err instanceof SchemaPinInputError && pattern.test(err.message),
      );
    }
  });

  it('checks the schema size before parsing: 1 MiB is accepted, one byte more is an input error', async () => {
    const body = JSON.stringify({ name: 'big', description: '' });
    const padded = body.slice(0, -1) + ' '.repeat(SCHEMA_MAX_BYTES - Buffer.byteLength(body)) + '}';
    assert.equal(Buffer.byteLength(padded), SCHEMA_MAX_BYTES);
    const unsigned = await verifySchema({ schema: padded, public_key_url: 'https://keys.example.test/k.pem' }, options);
    assert.match(unsigned.message, /unsigned/);
    // One byte over, and not even JSON: the size is what is reported.
    await assert.rejects(
      verifySchema({ schema: padded + '{', public_key_url: 'https://keys.example.test/k.pem' }, options),
      (err: unknown) => err instanceof SchemaPinInputError && /schema is 1048577 bytes; the limit is 1048576 bytes/.test(err.message),
    );
  });

  it('refuses schemas that are not JSON objects and malformed signatures as input errors', async () => {
    const url = 'https://keys.example.test/k.pem';
    for (const [input, pattern] of [
      [{ schema: '{"a":', public_key_url: url }, /schema is not valid JSON/],
      [{ schema: '[1,2]', public_key_url: url }, /must be a JSON object .* got an array/],
      [{ schema: '"text"', public_key_url: url }, /got a string/],
      [{ schema: '{"signature": 5}', public_key_url: url }, /"signature" field must be a base64 string/],
      [{ schema, public_key_url: url, signature: 'not base64!' }, /signature argument is not standard base64/],
      [{ schema, public_key_url: url, signature: 'A'.repeat(400) }, /400 characters/],
      [{ schema, public_key_url: url, signature: '' }, /signature argument is empty/],
      [{ schema: '['.repeat(200_000) + ']'.repeat(200_000), public_key_url: url }, /schema (is not valid JSON|cannot be canonicalised|must be a JSON object)/],
    ] as const) {
      await assert.rejects(verifySchema(input, options), (err: unknown) => err instanceof SchemaPinInputError && pattern.test(err.message), String(pattern));
    }
  });
});

describe('address classifier', () => {
  const cases: Array<[string, string | null]> = [
    ['8.8.8.8', null],
    ['93.184.216.34', null],
    ['2606:4700:4700::1111', null],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['10.255.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', null],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.128.0.1', null],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fdff::1', 'unique-local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['169.254.169.254', 'cloud metadata'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['100.100.100.200', 'cloud metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['::ffff:8.8.8.8', null],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::808:808', null],
    ['2002:7f00:1::', 'loopback'],
    ['2002:0808:0808::1', null],
    ['0.1.2.3', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['not-an-address', 'reserved'],
  ];
  for (const [address, kind] of cases) {
    it(`${address} is ${kind ?? 'public'}`, () => assert.equal(classifyAddress(address), kind));
  }

  it('lets the insecure switch reach local kinds only', () => {
    assert.equal(judgeAddress('127.0.0.1', true).allowed, true);
    assert.equal(judgeAddress('10.0.0.1', true).allowed, true);
    assert.equal(judgeAddress('fd12::1', true).allowed, true);
    assert.equal(judgeAddress('169.254.169.254', true).allowed, false);
    assert.equal(judgeAddress('ff02::1', true).allowed, false);
    assert.equal(judgeAddress('127.0.0.1', false).allowed, false);
    assert.equal(judgeAddress('8.8.8.8', false).allowed, true);
  });
});

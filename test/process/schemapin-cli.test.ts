import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { canonicalJson } from '../../src/shared/canonical-json.js';
import { SAMPLE_SCHEMA, startKeyServer, type KeyServer } from '../support/schemapin-fixtures.js';
import { symbiBin } from '../support/server-entry.js';

// `symbi schemapin` through the built CLI, with keys and signatures made by the
// openssl command line: a signature from `openssl dgst -sha256 -sign` over the
// canonical bytes verifies, and one from `symbi schemapin sign` verifies with
// `openssl dgst -verify`.

const symbi = symbiBin;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    const childEnv = { ...process.env, ...env };
    if (!('SYMBIONT_SCHEMAPIN_ALLOW_INSECURE' in env)) delete childEnv.SYMBIONT_SCHEMAPIN_ALLOW_INSECURE;
    execFile(process.execPath, [symbi, ...args], { env: childEnv, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const INSECURE = { SYMBIONT_SCHEMAPIN_ALLOW_INSECURE: '1' };

describe('symbi schemapin (CLI, openssl interop)', () => {
  let dir: string;
  let project: string;
  let keys: KeyServer;
  let opensslAvailable = true;
  const file = (name: string) => path.join(dir, name);

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemapin-cli-'));
    project = file('project');
    fs.mkdirSync(project);
    keys = await startKeyServer();
    try {
      execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', file('key.pem')], { stdio: 'ignore' });
      execFileSync('openssl', ['ec', '-in', file('key.pem'), '-pubout', '-out', file('pub.pem')], { stdio: 'ignore' });
      execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', file('rsa.pem')], { stdio: 'ignore' });
    } catch {
      opensslAvailable = false;
      return;
    }
    keys.serve('/pub.pem', { body: fs.readFileSync(file('pub.pem')) });
    // Written with reordered keys and extra white space: signing covers the canonical form.
    fs.writeFileSync(
      file('schema.json'),
      JSON.stringify({ inputSchema: SAMPLE_SCHEMA.inputSchema, name: SAMPLE_SCHEMA.name, description: SAMPLE_SCHEMA.description }, null, 3),
    );
    fs.writeFileSync(file('canonical.bin'), canonicalJson(SAMPLE_SCHEMA));
  });
  after(async () => {
    await keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('verifies a signature made by the openssl command line over the canonical bytes', async (t) => {
    if (!opensslAvailable) return t.skip('openssl is not available');
    const der = execFileSync('openssl', ['dgst', '-sha256', '-sign', file('key.pem'), file('canonical.bin')]);
    const sig = der.toString('base64');
    const result = await run(
      ['schemapin', 'verify', '--schema', file('schema.json'), '--key-url', keys.url('/pub.pem'), '--signature', sig, '--project', project],
      INSECURE,
    );
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout);
    assert.equal(report.verified, true);
    assert.equal(report.pinned, 'new');
    assert.match(result.stderr, /warning: SYMBIONT_SCHEMAPIN_ALLOW_INSECURE=1 is set/);
    assert.equal(fs.statSync(path.join(project, '.symbiont', 'schemapin', 'pins.json')).mode & 0o777, 0o600);
  });

  it('signs so that openssl dgst -verify accepts the signature, and verifies the signature embedded in the schema', async (t) => {
    if (!opensslAvailable) return t.skip('openssl is not available');
    const signed = await run(['schemapin', 'sign', '--schema', file('schema.json'), '--key', file('key.pem')]);
    assert.equal(signed.code, 0, signed.stderr);
    const sig = signed.stdout.trim();
    fs.writeFileSync(file('sig.der'), Buffer.from(sig, 'base64'));
    const verifiedByOpenssl = execFileSync('openssl', [
      'dgst',
      '-sha256',
      '-verify',
      file('pub.pem'),
      '-signature',
      file('sig.der'),
      file('canonical.bin'),
    ]).toString();
    assert.match(verifiedByOpenssl, /Verified OK/);

    fs.writeFileSync(file('embedded.json'), JSON.stringify({ signature: sig, ...SAMPLE_SCHEMA }));
    const result = await run(['schemapin', 'verify', '--schema', file('embedded.json'), '--key-url', keys.url('/pub.pem'), '--project', project], INSECURE);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).pinned, 'matched');
  });

  it('exits 1 with the report when verification fails, and refuses http:// without the switch', async (t) => {
    if (!opensslAvailable) return t.skip('openssl is not available');
    const unsigned = await run(['schemapin', 'verify', '--schema', file('schema.json'), '--key-url', keys.url('/pub.pem'), '--project', project], INSECURE);
    assert.equal(unsigned.code, 1);
    assert.equal(JSON.parse(unsigned.stdout).verified, false);
    assert.match(unsigned.stderr, /unsigned/);

    const sig = (await run(['schemapin', 'sign', '--schema', file('schema.json'), '--key', file('key.pem')])).stdout.trim();
    const plain = await run([
      'schemapin',
      'verify',
      '--schema',
      file('schema.json'),
      '--key-url',
      keys.url('/pub.pem'),
      '--signature',
      sig,
      '--project',
      project,
    ]);
    assert.equal(plain.code, 1);
    assert.match(JSON.parse(plain.stdout).message, /plain http:\/\/ key URLs are not fetched/);
    assert.doesNotMatch(plain.stderr, /warning/);
  });

  it('reports a rotated key as a pin mismatch until `schemapin unpin HOST`', async (t) => {
    if (!opensslAvailable) return t.skip('openssl is not available');
    execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', file('key2.pem')], { stdio: 'ignore' });
    keys.serve('/pub.pem', { body: execFileSync('openssl', ['ec', '-in', file('key2.pem'), '-pubout'], { stdio: ['ignore', 'pipe', 'ignore'] }) });
    const sig = (await run(['schemapin', 'sign', '--schema', file('schema.json'), '--key', file('key2.pem')])).stdout.trim();
    const args = ['schemapin', 'verify', '--schema', file('schema.json'), '--key-url', keys.url('/pub.pem'), '--signature', sig, '--project', project];
    const mismatch = await run(args, INSECURE);
    assert.equal(mismatch.code, 1);
    const report = JSON.parse(mismatch.stdout);
    assert.equal(report.pinned, 'mismatch');
    const host = `127.0.0.1:${keys.port}`;
    assert.ok(report.message.includes(`symbi schemapin unpin ${host}`));

    const listed = await run(['schemapin', 'pins', '--project', project]);
    assert.match(listed.stdout, new RegExp(`^${host.replace(/\./g, '\\.')} sha256:[0-9a-f]{64} `));

    const unpinned = await run(['schemapin', 'unpin', host, '--project', project]);
    assert.equal(unpinned.code, 0, unpinned.stderr);
    assert.match(unpinned.stdout, /removed the pin for 127\.0\.0\.1:\d+ \(sha256:/);
    const again = await run(['schemapin', 'unpin', host, '--project', project]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no pin for 127\.0\.0\.1:\d+; pinned hosts: none/);

    const repinned = await run(args, INSECURE);
    assert.equal(repinned.code, 0, repinned.stderr);
    assert.equal(JSON.parse(repinned.stdout).pinned, 'new');
  });

  it('refuses unusable input with exit 2 and one line', async (t) => {
    if (!opensslAvailable) return t.skip('openssl is not available');
    fs.writeFileSync(file('bad.json'), '{"a":');
    const cases: Array<[string[], RegExp]> = [
      [['schemapin', 'sign', '--schema', file('schema.json'), '--key', file('pub.pem')], /not an unencrypted PEM private key/],
      [['schemapin', 'sign', '--schema', file('schema.json'), '--key', file('rsa.pem')], /is an RSA key; SchemaPin signatures need an EC P-256/],
      [['schemapin', 'sign', '--schema', file('missing.json'), '--key', file('key.pem')], /schema .*missing\.json: cannot be opened \(ENOENT\)/],
      [['schemapin', 'sign', '--schema', file('bad.json'), '--key', file('key.pem')], /schema is not valid JSON/],
      [['schemapin', 'verify', '--schema', file('schema.json'), '--key-url', 'ftp://x/k', '--project', project], /only https:\/\/ key URLs are fetched/],
    ];
    for (const [args, pattern] of cases) {
      const result = await run(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, pattern);
      assert.equal(result.stderr.trim().split('\n').length, 1);
      assert.equal(result.stdout, '');
    }
  });
});

import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SAMPLE_SCHEMA, ecKeyPair, signSchema, startKeyServer, type KeyServer } from '../support/schemapin-fixtures.js';
import { builtModule, symbiBin } from '../support/server-entry.js';

// One trust-on-first-use pin per key host, however the key URL spells it.
// `symbi schemapin verify` (the CLI twin of the verify_schema tool) against a
// real key server on loopback in insecure test mode: after a host is pinned,
// the publisher's key is replaced by an attacker's, and a URL that spells the
// same host differently (IPv4-mapped IPv6, trailing dot, upper case) must meet
// the old pin as a mismatch rather than start a fresh pin. Pins stored in an
// older spelling still match, and `schemapin unpin` takes any spelling.
// A verification is what `symbi schemapin verify` prints (verifySchema's
// report): the first of a test runs the command, the others call verifySchema
// in this process; pins and unpin run as commands. Names resolved through a
// private /etc/hosts need a process in a mount namespace: one per key served,
// which runs verifySchema for each spelling.

// The verifier from dist/, which the namespaced child loads too.
const { verifySchema } = (await import(builtModule('shared/schemapin/verify-schema.js'))) as typeof import('../../src/shared/schemapin/verify-schema.js');
const { pinProject } = (await import(builtModule('shared/confinement/index.js'))) as typeof import('../../src/shared/confinement/index.js');

/** The verifications of `job` (key URL and signature each, in order), in a node process that loads the same modules, started by `wrap`; prints their reports as one JSON array. */
const VERIFY_ALL = `
const job = JSON.parse(process.argv[1]);
const { verifySchema } = await import(job.verifyModule);
const { pinProject } = await import(job.confinementModule);
const reports = [];
for (const call of job.calls) {
  reports.push(await verifySchema({ schema: job.schema, public_key_url: call.url, signature: call.signature }, { project: pinProject(job.project), allowInsecure: true }));
}
process.stdout.write(JSON.stringify(reports));
`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.tmpdir(), SYMBIONT_SCHEMAPIN_ALLOW_INSECURE: '1' };
    execFile(command, args, { env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

const publisher = ecKeyPair();
const attacker = ecKeyPair();
const SCHEMA_TEXT = JSON.stringify(SAMPLE_SCHEMA);

describe('SchemaPin pins are keyed by the normalized host', () => {
  let dir: string;
  let keys: KeyServer;
  let project: string;
  let schemaFile: string;
  /** Runs the CLI. */
  let symbi: (args: string[]) => Promise<Run>;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemapin-hosts-'));
    schemaFile = path.join(dir, 'schema.json');
    fs.writeFileSync(schemaFile, SCHEMA_TEXT);
    keys = await startKeyServer();
    symbi = (args) => run(process.execPath, [symbiBin, ...args]);
  });
  after(async () => {
    await keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function freshProject(): string {
    project = fs.mkdtempSync(path.join(dir, 'project-'));
    return project;
  }

  function serve(key: typeof publisher): void {
    keys.serve('/key.pem', { body: key.publicPem });
  }

  async function verify(url: string, key: typeof publisher): Promise<{ code: number; verified: boolean; pinned: string | null; message: string }> {
    const result = await symbi([
      'schemapin',
      'verify',
      '--schema',
      schemaFile,
      '--key-url',
      url,
      '--signature',
      signSchema(SAMPLE_SCHEMA, key.privateKey),
      '--project',
      project,
    ]);
    assert.ok(result.stdout.startsWith('{'), `${url}: ${result.stderr}`);
    const report = JSON.parse(result.stdout) as { verified: boolean; pinned: string | null; message: string };
    return { code: result.code, ...report };
  }

  /** verifySchema in this process, as the command calls it (insecure test mode, the project's pins). */
  async function verifyHere(url: string, key: typeof publisher): Promise<{ code: number; verified: boolean; pinned: string | null; message: string }> {
    const report = await verifySchema(
      { schema: SCHEMA_TEXT, public_key_url: url, signature: signSchema(SAMPLE_SCHEMA, key.privateKey) },
      { project: pinProject(project), allowInsecure: true },
    );
    // The command exits 1 for a report that does not verify.
    return { code: report.verified ? 0 : 1, verified: report.verified, pinned: report.pinned, message: report.message };
  }

  /** verifySchema for each URL, in order, in one node process started by `wrap`. */
  async function verifyAllIn(wrap: string[], urls: string[], key: typeof publisher): Promise<{ verified: boolean; pinned: string | null; message: string }[]> {
    const job = {
      verifyModule: builtModule('shared/schemapin/verify-schema.js'),
      confinementModule: builtModule('shared/confinement/index.js'),
      project,
      schema: SCHEMA_TEXT,
      calls: urls.map((url) => ({ url, signature: signSchema(SAMPLE_SCHEMA, key.privateKey) })),
    };
    const result = await run(wrap[0]!, [...wrap.slice(1), process.execPath, '--input-type=module', '-e', VERIFY_ALL, JSON.stringify(job)]);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as { verified: boolean; pinned: string | null; message: string }[];
  }

  function writePins(pins: Record<string, { fingerprint: string; first_seen: string }>): void {
    const store = path.join(project, '.symbiont', 'schemapin');
    fs.mkdirSync(store, { recursive: true, mode: 0o700 });
    fs.chmodSync(path.join(project, '.symbiont'), 0o700);
    fs.chmodSync(store, 0o700);
    fs.writeFileSync(path.join(store, 'pins.json'), JSON.stringify({ version: 1, pins }), { mode: 0o600 });
  }

  function storedHosts(): string[] {
    return Object.keys(JSON.parse(fs.readFileSync(path.join(project, '.symbiont', 'schemapin', 'pins.json'), 'utf8')).pins);
  }

  it('an IPv4-mapped IPv6 spelling of a pinned address meets the pin', async () => {
    freshProject();
    const port = keys.port;
    serve(publisher);
    const first = await verify(`http://127.0.0.1:${port}/key.pem`, publisher);
    assert.equal(first.verified, true, first.message);
    assert.equal(first.pinned, 'new');

    serve(attacker);
    for (const spelling of [`[::ffff:127.0.0.1]`, `[::FFFF:7f00:1]`]) {
      const sidestep = await verifyHere(`http://${spelling}:${port}/key.pem`, attacker);
      assert.equal(sidestep.verified, false, `${spelling}: ${sidestep.message}`);
      assert.equal(sidestep.pinned, 'mismatch', spelling);
      assert.ok(sidestep.message.includes(`symbi schemapin unpin 127.0.0.1:${port}`), sidestep.message);
    }
    assert.deepEqual(storedHosts(), [`127.0.0.1:${port}`]);
  });

  it('pins stored in older spellings still match, and unpin takes any spelling', async () => {
    freshProject();
    const port = keys.port;
    writePins({
      [`LOCALHOST.:${port}`]: { fingerprint: publisher.fingerprint, first_seen: '2026-01-02T03:04:05.000Z' },
      [`[::ffff:7f00:1]:${port}`]: { fingerprint: publisher.fingerprint, first_seen: '2026-01-02T03:04:05.000Z' },
    });
    serve(attacker);
    for (const url of [`http://localhost:${port}/key.pem`, `http://127.0.0.1:${port}/key.pem`]) {
      const report = await verifyHere(url, attacker);
      assert.equal(report.verified, false, `${url}: ${report.message}`);
      assert.equal(report.pinned, 'mismatch', url);
    }

    const listed = await symbi(['schemapin', 'pins', '--project', project]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ')[0])
        .sort(),
      [`127.0.0.1:${port}`, `localhost:${port}`],
    );

    const unpinned = await symbi(['schemapin', 'unpin', `Localhost.:${port}`, '--project', project]);
    assert.equal(unpinned.code, 0, unpinned.stderr);
    assert.match(unpinned.stdout, new RegExp(`removed the pin for localhost:${port} \\(${publisher.fingerprint}`));
    const repinned = await verifyHere(`http://localhost:${port}/key.pem`, attacker);
    assert.equal(repinned.verified, true, repinned.message);
    assert.equal(repinned.pinned, 'new');
    // The store is rewritten in normalized spellings.
    assert.deepEqual(storedHosts().sort(), [`127.0.0.1:${port}`, `localhost:${port}`]);
  });

  it('two stored spellings of one host keep the first key seen for it', async () => {
    freshProject();
    writePins({
      'example.com': { fingerprint: attacker.fingerprint, first_seen: '2026-03-01T00:00:00.000Z' },
      'Example.COM.': { fingerprint: publisher.fingerprint, first_seen: '2025-01-01T00:00:00.000Z' },
      'BÜCHER.example': { fingerprint: publisher.fingerprint, first_seen: '2025-01-01T00:00:00.000Z' },
    });
    const listed = await symbi(['schemapin', 'pins', '--project', project]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(listed.stdout.trim().split('\n').sort(), [
      `example.com ${publisher.fingerprint} 2025-01-01T00:00:00.000Z`,
      `xn--bcher-kva.example ${publisher.fingerprint} 2025-01-01T00:00:00.000Z`,
    ]);
    const unpinned = await symbi(['schemapin', 'unpin', 'bücher.example.', '--project', project]);
    assert.equal(unpinned.code, 0, unpinned.stderr);
    assert.match(unpinned.stdout, /removed the pin for xn--bcher-kva\.example /);
  });

  const hostsSkip = ((): string | false => {
    if (process.getuid?.() !== 0) return 'skipped: resolving test host names through a private /etc/hosts needs root (unshare --mount)';
    try {
      execFileSync('unshare', ['--mount', 'true'], { stdio: 'ignore' });
      return false;
    } catch {
      return 'skipped: unshare --mount is not available';
    }
  })();

  it('a trailing dot or upper case on a pinned host name meets the pin (names resolved by the system resolver)', { skip: hostsSkip }, async () => {
    // The verifications run in a mount namespace whose /etc/hosts names the loopback key server.
    const hosts = path.join(dir, 'hosts');
    fs.writeFileSync(hosts, '127.0.0.1 localhost keys.test keys.test. xn--bcher-kva.test xn--bcher-kva.test.\n');
    const wrap = ['unshare', '--mount', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hosts];
    freshProject();
    const port = keys.port;

    serve(publisher);
    const [first, idn] = await verifyAllIn(wrap, [`http://keys.test:${port}/key.pem`, `http://bücher.test.:${port}/key.pem`], publisher);
    assert.equal(first!.pinned, 'new', first!.message);
    assert.equal(idn!.pinned, 'new', idn!.message);

    serve(attacker);
    const spellings = ['keys.test.', 'KEYS.Test.', 'xn--bcher-kva.test', 'BÜCHER.test.'];
    const sidesteps = await verifyAllIn(
      wrap,
      spellings.map((host) => `http://${host}:${port}/key.pem`),
      attacker,
    );
    assert.equal(sidesteps.length, spellings.length);
    for (const [i, host] of spellings.entries()) {
      const sidestep = sidesteps[i]!;
      assert.equal(sidestep.verified, false, `${host}: ${sidestep.message}`);
      assert.equal(sidestep.pinned, 'mismatch', `${host}: ${sidestep.message}`);
    }
    assert.deepEqual(storedHosts().sort(), [`keys.test:${port}`, `xn--bcher-kva.test:${port}`]);
  });
});

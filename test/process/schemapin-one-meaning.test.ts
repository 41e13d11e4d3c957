import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ecKeyPair, signSchema, startKeyServer, type KeyServer, type TestKeyPair } from '../support/schemapin-fixtures.js';
import { builtModule, symbiBin } from '../support/server-entry.js';

// One signature, one schema: `symbi schemapin verify` refuses schema text that
// two JSON readers would read differently (a duplicate key, an integer a
// double cannot hold) before canonicalising it, and key documents that are
// ambiguous or name a key no signer can hold (the P-256 point at infinity,
// which used to abort the process when its curve was asked for). The command
// runs for a refused schema (exit 2, one line on stderr) and for the key that
// used to abort it; each other document goes to verifySchema, which the command
// calls, in this process.

const { verifySchema } = (await import(builtModule('shared/schemapin/verify-schema.js'))) as typeof import('../../src/shared/schemapin/verify-schema.js');
const { SchemaPinInputError } = (await import(
  builtModule('shared/schemapin/schemapin-errors.js')
)) as typeof import('../../src/shared/schemapin/schemapin-errors.js');
const { pinProject } = (await import(builtModule('shared/confinement/index.js'))) as typeof import('../../src/shared/confinement/index.js');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const env = { ...process.env, SYMBIONT_SCHEMAPIN_ALLOW_INSECURE: '1' };
    execFile(process.execPath, [symbiBin, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: number; signal?: NodeJS.Signals }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr });
    });
  });
}

/** The P-256 SubjectPublicKeyInfo whose point is the point at infinity (one zero byte). */
function infinityPem(): string {
  const der = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'der' });
  const body = Buffer.concat([der.subarray(2, 23), Buffer.from('03020000', 'hex')]);
  const spki = Buffer.concat([Buffer.from([0x30, body.length]), body]);
  return `-----BEGIN PUBLIC KEY-----\n${spki.toString('base64')}\n-----END PUBLIC KEY-----\n`;
}

describe('symbi schemapin verify: one meaning per signed schema and key document', () => {
  let dir: string;
  let keys: KeyServer;
  let pair: TestKeyPair;
  const file = (name: string) => path.join(dir, name);

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemapin-one-meaning-'));
    fs.mkdirSync(file('project'));
    pair = ecKeyPair();
    keys = await startKeyServer();
    keys.serve('/pub.pem', { body: pair.publicPem });
    keys.serve('/infinity.pem', { body: infinityPem() });
    keys.serve('/dup.json', { body: `{"public_key_pem":${JSON.stringify(ecKeyPair().publicPem)},"public_key_pem":${JSON.stringify(pair.publicPem)}}` });
  });
  after(async () => {
    await keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const verify = (schemaText: string, keyPath = '/pub.pem') => {
    fs.writeFileSync(file('schema.json'), schemaText);
    return run(['schemapin', 'verify', '--schema', file('schema.json'), '--key-url', keys.url(keyPath), '--project', file('project')]);
  };
  /**
   * verifySchema on the same text and key URL, in this process, as the command's exit status and
   * report: 0 verified, 1 not (the report), 2 for unusable input (a SchemaPinInputError, whose message
   * the command prints on stderr).
   */
  const verifyHere = async (schemaText: string, keyPath = '/pub.pem'): Promise<{ code: number; message: string }> => {
    try {
      const report = await verifySchema(
        { schema: schemaText, public_key_url: keys.url(keyPath) },
        { project: pinProject(file('project')), allowInsecure: true },
      );
      return { code: report.verified ? 0 : 1, message: report.message };
    } catch (error) {
      if (!(error instanceof SchemaPinInputError)) throw error;
      return { code: 2, message: error.message };
    }
  };

  it('refuses a duplicated key, which JSON.parse would read as the signed schema', async () => {
    const signature = signSchema({ name: 'read_file', description: 'evil' }, pair.privateKey);
    // Control: the signed schema itself verifies.
    const signed = await verifyHere(JSON.stringify({ name: 'read_file', description: 'evil', signature }));
    assert.equal(signed.code, 0, signed.message);
    const twoMeanings = await verify(`{"name":"read_file","description":"safe","description":"evil","signature":${JSON.stringify(signature)}}`);
    assert.equal(twoMeanings.code, 2, twoMeanings.stdout + twoMeanings.stderr);
    assert.equal(twoMeanings.stdout, '');
    const said = twoMeanings.stderr
      .trim()
      .split('\n')
      .filter((line) => !line.includes('SYMBIONT_SCHEMAPIN_ALLOW_INSECURE'));
    assert.equal(said.length, 1, twoMeanings.stderr);
    assert.match(said[0]!, /^symbi schemapin: schema refused before canonicalising: duplicate key "description"/);
  });

  it('refuses an integer a double cannot hold, which would verify with the signature of its neighbour', async () => {
    const signature = signSchema({ name: 'read_file', maxItems: 9007199254740992 }, pair.privateKey);
    const signed = await verifyHere(`{"name":"read_file","maxItems":9007199254740992,"signature":${JSON.stringify(signature)}}`);
    assert.equal(signed.code, 0, signed.message);
    const neighbour = await verifyHere(`{"name":"read_file","maxItems":9007199254740993,"signature":${JSON.stringify(signature)}}`);
    assert.equal(neighbour.code, 2, neighbour.message);
    assert.match(neighbour.message, /maxItems: the number 9007199254740993 is an integer a double cannot hold exactly/);
  });

  it('refuses a key document with two public keys, and a key at the point at infinity, without dying', async () => {
    const signature = signSchema({ name: 'read_file' }, pair.privateKey);
    const schema = JSON.stringify({ name: 'read_file', signature });
    const ambiguous = await verifyHere(schema, '/dup.json');
    assert.equal(ambiguous.code, 1, ambiguous.message);
    assert.match(ambiguous.message, /the key document is ambiguous: duplicate key "public_key_pem"/);
    const infinity = await verify(schema, '/infinity.pem');
    assert.equal(infinity.signal, null, `the process died: ${infinity.stderr.slice(0, 300)}`);
    assert.equal(infinity.code, 1, infinity.stderr);
    assert.match(JSON.parse(infinity.stdout).message, /point at infinity/);
  });
});

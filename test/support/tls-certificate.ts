import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

/**
 * Writes a self-signed P-256 key and certificate for `subject` and `altNames`
 * (openssl's subjectAltName syntax, e.g. `IP:127.0.0.1` or `DNS:a.test,DNS:b.test`)
 * with the openssl command line, for a test's own TLS servers.
 */
export function selfSignedCertificate(keyFile: string, certFile: string, subject: string, altNames: string): void {
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      subject,
      '-addext',
      `subjectAltName=${altNames}`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(made.status, 0, `openssl req: ${made.stderr || made.error?.message}`);
}

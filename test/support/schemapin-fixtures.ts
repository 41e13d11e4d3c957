import { generateKeyPairSync, sign, createHash, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { canonicalJson } from '../../src/shared/canonical-json.js';
import { PinnedDirectory, pinProject } from '../../src/shared/confinement/index.js';

// Shared by the schemapin-*.test.ts files: key pairs, signing with plain
// Node.js crypto (independent of the code under test), a local key server on
// 127.0.0.1 and throw-away project folders.

export interface TestKeyPair {
  privateKey: KeyObject;
  privatePem: string;
  publicPem: string;
  fingerprint: string;
}

export function ecKeyPair(): TestKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return {
    privateKey,
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    fingerprint: 'sha256:' + createHash('sha256').update(der).digest('hex'),
  };
}

/** Base64 DER signature of the canonical JSON of `schema` without its top-level `signature`. */
export function signSchema(schema: Record<string, unknown>, privateKey: KeyObject): string {
  const { signature: _ignored, ...unsigned } = schema;
  void _ignored;
  return sign('sha256', Buffer.from(canonicalJson(unsigned), 'utf8'), { key: privateKey, dsaEncoding: 'der' }).toString('base64');
}

export const SAMPLE_SCHEMA = {
  name: 'read_file',
  description: 'Reads a file from the workspace',
  inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'relative path' } }, required: ['path'] },
};

export interface Served {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Custom handling (streaming, never answering); overrides the fields above. */
  handle?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
}

export interface KeyServer {
  origin: string;
  port: number;
  url(pathname: string): string;
  serve(pathname: string, response: Served): void;
  /** Request paths and Host headers seen, in order. */
  requests: Array<{ path: string; host: string | undefined }>;
  close(): Promise<void>;
}

export async function startKeyServer(): Promise<KeyServer> {
  const routes = new Map<string, Served>();
  const requests: KeyServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const pathname = (req.url ?? '/').split('?')[0]!;
    requests.push({ path: pathname, host: req.headers.host });
    const route = routes.get(pathname);
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (route.handle) {
      route.handle(req, res);
      return;
    }
    const body = route.body ?? '';
    res.writeHead(route.status ?? 200, { 'content-type': 'text/plain', ...route.headers, 'content-length': String(Buffer.byteLength(body)) }).end(body);
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    port,
    url: (pathname) => `${origin}${pathname}`,
    serve: (pathname, response) => routes.set(pathname, response),
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface TempProject {
  dir: string;
  project: PinnedDirectory;
  pinsFile: string;
  remove(): void;
}

export function tempProject(): TempProject {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemapin-test-'));
  const project = pinProject(dir);
  return {
    dir,
    project,
    pinsFile: path.join(dir, '.symbiont', 'schemapin', 'pins.json'),
    remove: () => {
      try {
        fs.closeSync(project.fd);
      } catch {
        // already closed
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The environment of a server that fetches keys from a test's own TLS key servers: their certificate (`certFile`) trusted, plain http allowed. */
export function keyFetchServerEnv(certFile: string, home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? home,
    SYMBIONT_SCHEMAPIN_ALLOW_INSECURE: '1',
    NODE_EXTRA_CA_CERTS: certFile,
  };
}

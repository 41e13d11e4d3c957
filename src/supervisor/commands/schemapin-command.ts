import fs from 'node:fs';
import type { Command } from 'commander';
import { KiB, SCHEMA_MAX_BYTES } from '../../shared/limits.js';
import { PinnedDirectory, pinProject, ReservedDirectoriesError } from '../../shared/confinement/index.js';
import { insecureWarning, schemapinInsecureFromEnv } from '../../shared/schemapin/insecure-mode.js';
import { normalizePinHost, pinHostOf } from '../../shared/schemapin/pin-host.js';
import { PinStore } from '../../shared/schemapin/pin-store.js';
import { prepareSchema } from '../../shared/schemapin/schema-document.js';
import { loadSigningKey, signCanonicalSchema } from '../../shared/schemapin/schema-signature.js';
import { SchemaPinCheckError, SchemaPinInputError } from '../../shared/schemapin/schemapin-errors.js';
import { verifySchema } from '../../shared/schemapin/verify-schema.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';

// `symbi schemapin`: sign a schema (tool authors), verify one exactly as the
// verify_schema tool does, and list or remove trust-on-first-use pins
// (operators). Reports go to stdout, diagnostics to stderr; every line for
// people goes through escapeToOneLine (a host name in pins.json, a file name,
// a key server's words), the JSON reports are exact.
// Exit codes: 0 success / verified; 1 not verified, or no such pin; 2 unusable input.

const PRIVATE_KEY_MAX_BYTES = 64 * KiB;
const EXIT_FAILED = 1;
const EXIT_BAD_INPUT = 2;

function fail(message: string, code: number): void {
  process.stderr.write(`symbi schemapin: ${escapeToOneLine(message)}\n`);
  process.exitCode = code;
}

/** Reads an operator-named file, refusing anything but a regular file within `maxBytes`. */
function readLocalFile(file: string, maxBytes: number, what: string): string {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    throw new SchemaPinInputError(`${what} ${file}: cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new SchemaPinInputError(`${what} ${file}: is not a regular file`);
    if (stat.size > maxBytes) throw new SchemaPinInputError(`${what} ${file}: is ${stat.size} bytes; the limit is ${maxBytes} bytes`);
    const buffer = Buffer.alloc(maxBytes + 1);
    let filled = 0;
    for (let n = 1; n > 0 && filled < buffer.length; filled += n) n = fs.readSync(fd, buffer, filled, buffer.length - filled, null);
    if (filled > maxBytes) throw new SchemaPinInputError(`${what} ${file}: is larger than the limit of ${maxBytes} bytes`);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, filled));
    } catch {
      throw new SchemaPinInputError(`${what} ${file}: is not valid UTF-8 text`);
    }
  } finally {
    fs.closeSync(fd);
  }
}

function pinProjectFlag(dir: string): PinnedDirectory {
  try {
    return pinProject(dir);
  } catch (err) {
    if (err instanceof ReservedDirectoriesError) throw new SchemaPinInputError(`project directory ${dir}: ${err.message}`);
    throw new SchemaPinInputError(`project directory ${dir}: cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Accepts a bare host[:port] or a key URL and returns the pin key. */
function pinHostArgument(text: string): string {
  const trimmed = text.trim();
  if (trimmed.includes('://')) {
    try {
      return pinHostOf(new URL(trimmed));
    } catch (err) {
      if (err instanceof SchemaPinInputError) throw err;
      throw new SchemaPinInputError(`${JSON.stringify(trimmed.slice(0, 80))} is not a URL; give the pinned host as host or host:port`);
    }
  }
  if (trimmed === '' || /[\s/]/.test(trimmed)) throw new SchemaPinInputError('give the pinned host as host or host:port (as `symbi schemapin pins` lists it)');
  return normalizePinHost(trimmed);
}

function reportError(err: unknown): void {
  if (err instanceof SchemaPinInputError) fail(err.message, EXIT_BAD_INPUT);
  else if (err instanceof SchemaPinCheckError) fail(err.message, EXIT_FAILED);
  else fail(`internal error: ${(err as Error)?.message ?? String(err)}`, EXIT_FAILED);
}

export function registerSchemapinCommand(program: Command): void {
  const schemapin = program.command('schemapin').description('Sign and verify tool schemas (SchemaPin) and manage trust-on-first-use key pins');

  schemapin
    .command('sign')
    .description('Print the base64 ECDSA P-256 signature of a schema file (its canonical JSON, without any top-level "signature" field)')
    .requiredOption('--schema <file>', 'the tool schema, JSON')
    .requiredOption('--key <private.pem>', 'EC P-256 private key, PEM')
    .action((flags: { schema: string; key: string }) => {
      try {
        const prepared = prepareSchema(readLocalFile(flags.schema, SCHEMA_MAX_BYTES, 'schema'));
        const key = loadSigningKey(readLocalFile(flags.key, PRIVATE_KEY_MAX_BYTES, 'key'), flags.key);
        process.stdout.write(`${signCanonicalSchema(prepared.canonical, key)}\n`);
      } catch (err) {
        reportError(err);
      }
    });

  schemapin
    .command('verify')
    .description('Verify a signed schema as the verify_schema tool does and print its JSON report (exit 0 verified, 1 not verified, 2 unusable input)')
    .requiredOption('--schema <file>', 'the tool schema, JSON (signature in its top-level "signature" field or in --signature)')
    .requiredOption('--key-url <url>', "https URL of the publisher's public key or schemapin.json")
    .option('--signature <base64>', 'base64 DER signature, when the schema does not carry one')
    .option('--project <dir>', 'project whose .symbiont/schemapin/pins.json holds the pins', '.')
    .action(async (flags: { schema: string; keyUrl: string; signature?: string; project: string }) => {
      try {
        const allowInsecure = schemapinInsecureFromEnv(process.env);
        if (allowInsecure) process.stderr.write(`symbi schemapin: ${escapeToOneLine(insecureWarning())}\n`);
        const schema = readLocalFile(flags.schema, SCHEMA_MAX_BYTES, 'schema');
        const result = await verifySchema(
          { schema, public_key_url: flags.keyUrl, signature: flags.signature },
          { project: pinProjectFlag(flags.project), allowInsecure },
        );
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        if (!result.verified) fail(result.message, EXIT_FAILED);
      } catch (err) {
        reportError(err);
      }
    });

  schemapin
    .command('pins')
    .description('List the pinned key fingerprints, one host per line')
    .option('--project <dir>', 'project whose pins to list', '.')
    .action((flags: { project: string }) => {
      try {
        for (const [host, pin] of new PinStore(pinProjectFlag(flags.project)).list()) {
          process.stdout.write(`${escapeToOneLine(`${host} ${pin.fingerprint} ${pin.first_seen}`)}\n`);
        }
      } catch (err) {
        reportError(err);
      }
    });

  schemapin
    .command('unpin')
    .description('Forget the pinned key of HOST (host or host:port) after its publisher rotated keys; the next key seen is pinned')
    .argument('<host>', 'the pinned host, as shown in a mismatch message')
    .option('--project <dir>', 'project whose pins to change', '.')
    .action((hostText: string, flags: { project: string }) => {
      try {
        const host = pinHostArgument(hostText);
        const store = new PinStore(pinProjectFlag(flags.project));
        const removed = store.unpin(host);
        if (removed === null) {
          const known = [...store.list().keys()];
          fail(`no pin for ${host}; pinned hosts: ${known.length === 0 ? 'none' : known.join(', ')}`, EXIT_FAILED);
          return;
        }
        process.stdout.write(`${escapeToOneLine(`removed the pin for ${host} (${removed.fingerprint}, first seen ${removed.first_seen})`)}\n`);
      } catch (err) {
        reportError(err);
      }
    });
}

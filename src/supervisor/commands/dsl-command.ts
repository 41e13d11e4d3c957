import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { Command } from 'commander';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { DSL_FILE_MAX_BYTES } from '../../shared/limits.js';
import { parseDslBytes } from '../../shared/dsl/parse-report.js';

// `symbi dsl -f FILE`: prints the parse report of a user-named file as JSON.
// Exit 0 when clean, 1 with syntax errors, 2 for usage errors. This reads a
// file the user named on the command line, so it is not the confined server
// path, but it still refuses non-regular files and oversized files without
// blocking (O_NONBLOCK, fstat before reading).

class UsageError extends Error {}

export function registerDslCommand(program: Command): void {
  program
    .command('dsl')
    .description('Parse a Symbiont DSL file and print its parse report as JSON')
    .option('-f, --file <path>', 'the .symbi or .dsl file to parse')
    // Commander has already printed its one-line message; bad arguments are usage errors (2).
    .exitOverride((err) => {
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action((options: { file?: string }) => {
      try {
        if (options.file === undefined || options.file.length === 0) {
          throw new UsageError('symbi dsl: missing -f FILE; give the path of a .symbi or .dsl file');
        }
        const bytes = readDslFile(options.file);
        const report = parseDslBytes(bytes, options.file);
        process.stdout.write(JSON.stringify(report, null, 2) + '\n');
        process.exitCode = report.has_errors ? 1 : 0;
      } catch (err) {
        const message = err instanceof UsageError ? err.message : `symbi dsl: ${err instanceof Error ? err.message : String(err)}`;
        process.stderr.write(escapeToOneLine(message) + '\n');
        process.exitCode = 2;
      }
    });
}

/** Reads the file `symbi dsl` was given, or throws its one-line usage error; exported for the tests of each refusal. */
export function readDslFile(path: string): Uint8Array {
  const shown = JSON.stringify(path);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`symbi dsl: cannot open ${shown} (${code}); give a readable regular file`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new UsageError(`symbi dsl: ${shown} is not a regular file; give a .symbi or .dsl file`);
    if (stat.size > DSL_FILE_MAX_BYTES) {
      throw new UsageError(`symbi dsl: ${shown} is ${stat.size} bytes; the limit is ${DSL_FILE_MAX_BYTES} bytes (1 MiB)`);
    }
    // Read with a cap one past the limit, in case the file grows while we read.
    const buffer = Buffer.alloc(DSL_FILE_MAX_BYTES + 1);
    let total = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, total, buffer.length - total, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        throw new UsageError(`symbi dsl: cannot read ${shown} (${code})`);
      }
      if (n === 0) break;
      total += n;
      if (total > DSL_FILE_MAX_BYTES) throw new UsageError(`symbi dsl: ${shown} is over the limit of ${DSL_FILE_MAX_BYTES} bytes (1 MiB)`);
    }
    return buffer.subarray(0, total);
  } finally {
    closeSync(fd);
  }
}

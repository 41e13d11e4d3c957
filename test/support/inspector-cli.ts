import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './server-entry.js';

// The MCP Inspector CLI, a client this project did not write, run as a user
// would run it: `mcp-inspector-cli --cli <server command...> --method ...`.
// Shared by inspector-cli.test.ts (the repository's bin) and
// e2e/package-install.test.ts (the bin of the installed tarball).

function inspectorBin(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('@modelcontextprotocol/inspector-cli/package.json', { paths: [repoRoot] });
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!;
  return path.join(path.dirname(manifestPath), bin);
}

export interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the Inspector CLI against `serverCommand` (the command and its arguments) with one method. */
export function runInspector(serverCommand: string[], methodArgs: string[]): Promise<InspectorRun> {
  const bin = inspectorBin();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--cli', ...serverCommand, ...methodArgs],
      {
        // inspector-cli 1.0.3 looks for its own package.json as "../package.json" relative to the
        // working directory; running from its build folder makes that lookup succeed.
        cwd: path.dirname(bin),
        // Node must be on PATH: the launcher starts its client with `node`. No provider keys are passed.
        env: { PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? os.tmpdir() },
        timeout: 45_000,
        maxBuffer: 8 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The one JSON document the Inspector CLI prints on stdout (its deprecation notice goes to stderr). */
export function inspectorJson(run: InspectorRun): Record<string, unknown> {
  assert.equal(run.code, 0, `inspector exited ${run.code}: ${run.stderr.slice(-2000)}`);
  const start = run.stdout.indexOf('{');
  assert.ok(start >= 0, `no JSON on stdout: ${run.stdout.slice(0, 500)}`);
  return JSON.parse(run.stdout.slice(start)) as Record<string, unknown>;
}

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import nacl from 'tweetnacl';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';

// Shared by the invoke and cancellation suites: a temporary project on disk and
// a real `symbi mcp` child process driven over stdio by the SDK client.

import { repoRoot, symbiBin } from './server-entry.js';

export { repoRoot, symbiBin };

export interface ProjectFiles {
  [relativePath: string]: string;
}

export function makeProject(files: ProjectFiles): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-invoke-'));
  for (const [rel, text] of Object.entries(files)) {
    const full = path.join(dir, rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, text);
  }
  return dir;
}

export function removeProject(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export function providerEnv(baseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: 'sk-test-not-a-real-key',
    CHAT_MODEL: 'synthetic-model',
    ...extra,
  };
}

export interface RunningServer {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
  pid(): number;
  close(): Promise<void>;
}

export async function startServer(project: string, env: Record<string, string>, extraArgs: string[] = []): Promise<RunningServer> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [symbiBin, 'mcp', '--project', project, ...extraArgs],
    env,
    stderr: 'pipe',
  });
  let stderrText = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderrText += chunk.toString('utf8');
  });
  const client = new Client({ name: 'symbi-test', version: '0.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => stderrText,
    pid: () => transport.pid ?? -1,
    close: async () => {
      await client.close().catch(() => undefined);
    },
  };
}

export interface JournalRecord {
  line: string;
  payload: {
    version: number;
    run_id: string;
    previous_hash: string;
    entry: { sequence: number; agent_id: string; event: Record<string, Record<string, unknown>> };
  };
}

export function readJournal(file: string): JournalRecord[] {
  const text = fs.readFileSync(file, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((line) => ({ line, payload: JSON.parse(line).payload }));
}

export function eventNames(records: JournalRecord[]): string[] {
  return records.map((r) => Object.keys(r.payload.entry.event)[0]!);
}

export function journalsIn(project: string): string[] {
  const dir = path.join(project, '.symbiont', 'governed');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .map((n) => path.join(dir, n));
}

export function inspect(journal: string, runId: string, publicKey: string): { status: number; report: Record<string, unknown> } {
  const result = spawnSync(process.execPath, [symbiBin, 'audit', 'inspect', journal, '--run-id', runId, '--public-key', publicKey, '--cross-check'], {
    encoding: 'utf8',
  });
  let report: Record<string, unknown> = {};
  try {
    report = JSON.parse(result.stdout);
  } catch {
    report = { unparsed: result.stdout, stderr: result.stderr };
  }
  return { status: result.status ?? -1, report };
}

export interface AuditRef {
  agent_id: string;
  audit: { run_id: string; path: string; public_key: string };
}

export function auditOf(result: unknown): AuditRef {
  return (result as { structuredContent: AuditRef }).structuredContent;
}

export function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

/** The public key derived independently (tweetnacl) from the project's key file. */
export function projectPublicKey(project: string): string {
  const seed = fs.readFileSync(path.join(project, '.symbiont', 'governed', 'audit-signing.key'));
  return Buffer.from(nacl.sign.keyPair.fromSeed(new Uint8Array(seed)).publicKey).toString('hex');
}

/**
 * A finished run's journal is complete. When the run had sent its provider
 * request and no result was recorded (a cancel, an error, a lost thread), that
 * call is an unknown effect, so the journal also needs reconciliation (exit 2),
 * as Symbiont's inspect reports it; otherwise it exits 0. Returns the exit code.
 */
export function assertCompleteJournal(file: string, key: string): number {
  const { exitCode, report } = inspectJournal(file, path.basename(file, '.jsonl'), key);
  assert.equal(report.journal_complete, true, `${file}: ${JSON.stringify(report)}`);
  const unknown = report.effects.some((effect) => effect.outcome === 'unknown');
  assert.equal(exitCode, unknown ? 2 : 0, `${file}: ${JSON.stringify(report)}`);
  return exitCode;
}

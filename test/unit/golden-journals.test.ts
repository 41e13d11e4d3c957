import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';
import { inspect, readJournal } from '../support/journal.js';
import { readAsSymbiont } from '../support/symbiont-reader.js';
import { repoRoot } from '../support/server-entry.js';

// Golden journals of Symbiont's format, one per outcome, as this server wrote them when they were
// made (scripts/make-golden-journals.ts), with the key that signed them and the verdicts
// `audit inspect` gave then (manifest.json). Every later version must give the same verdicts, and
// Symbiont's types and its writer rule must still read them (symbiont-reader.ts): a change that
// breaks journals already written fails here. journals-0.2-each-attempt-a-call holds the journals
// of the version before issue 55 (commit 92ee30c), where a retry was its own reservation and
// request after the failed attempt's finish: Symbiont's writer would have refused that, so they are
// held to their verdicts only.

interface Expected {
  outcome: string;
  status: number;
  terminal_reason: unknown;
  records: number;
  last_event: string;
}

function goldenJournals(folder: string): { dir: string; key: string; manifest: [string, Expected][] } {
  const dir = path.join(repoRoot, 'test', 'fixtures', folder);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Record<string, Expected>;
  return { dir, key: fs.readFileSync(path.join(dir, 'public-key'), 'utf8').trim(), manifest: Object.entries(manifest) };
}

const runIdOf = (name: string): string =>
  name
    .replace(/\.jsonl$/, '')
    .split('.')
    .at(-1)!;

{
  const { dir, key, manifest } = goldenJournals('journals-0.2-each-attempt-a-call');
  for (const [name, expected] of manifest) {
    test(`a journal of the version before Symbiont's writer rule (${expected.outcome}) keeps its verdict`, () => {
      const { exitCode, report } = inspectJournal(path.join(dir, name), runIdOf(name), key);
      assert.equal(exitCode, expected.status, JSON.stringify(report));
      assert.equal(report.record_format, 'symbiont-response-route');
      // As the command prints it: JSON (the verifier's objects have no prototype).
      assert.deepEqual(JSON.parse(JSON.stringify(report.terminal_reason)), expected.terminal_reason);
      assert.equal(report.records, expected.records);
    });
  }
}

for (const folder of ['journals-0.2']) {
  const { dir, key, manifest } = goldenJournals(folder);
  for (const [name, expected] of manifest) {
    test(`a golden journal of ${folder} (${expected.outcome}) verifies as it did when it was written`, () => {
      const file = path.join(dir, name);
      const runId = name
        .replace(/\.jsonl$/, '')
        .split('.')
        .at(-1)!;
      const { status, report } = inspect(file, runId, key);
      assert.equal(status, expected.status, JSON.stringify(report));
      assert.equal(report.record_format, 'symbiont-response-route');
      assert.equal(report.journal_complete, true);
      assert.deepEqual(report.terminal_reason, expected.terminal_reason);
      assert.equal(report.records, expected.records);
      assert.equal(report.last_event, expected.last_event);
      // Symbiont's types, and its writer's rule, read every record (inspect checks them too; said here for the reader).
      assert.equal(readAsSymbiont(file).length, expected.records);
      assert.equal(readJournal(file).length, expected.records);
    });
  }
}

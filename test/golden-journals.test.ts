import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { inspect, readJournal } from './support/journal.js';
import { readAsSymbiont } from './support/symbiont-reader.js';
import { repoRoot } from './support/server-entry.js';

// Golden journals of Symbiont's format, one per outcome, as this server wrote them when they were
// made (scripts/make-golden-journals.ts), with the key that signed them and the verdicts
// `audit inspect` gave then (manifest.json). Every later version must give the same verdicts, and
// Symbiont's types and its writer rule must still read them (symbiont-reader.ts): a change that
// breaks journals already written fails here.

interface Expected {
  outcome: string;
  status: number;
  terminal_reason: unknown;
  records: number;
  last_event: string;
}

for (const folder of ['journals-0.2']) {
  const dir = path.join(repoRoot, 'test', 'fixtures', folder);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Record<string, Expected>;
  const key = fs.readFileSync(path.join(dir, 'public-key'), 'utf8').trim();
  for (const [name, expected] of Object.entries(manifest)) {
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

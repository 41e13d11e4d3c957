import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot, scriptArgs } from '../support/server-entry.js';

// The lint is one oxlint run (`npm run lint`, scripts/lint.ts) with the rules of .oxlintrc.json. A
// rule that stops finding what it should (a misspelt name, an option it no longer reads, a file
// the type-aware rules never see because no tsconfig.json gives it the project's options) fails
// nothing in a clean tree, so this lints test/fixtures/lint-probe/probe.ts, which breaks every
// configured rule once and says which on each line (`lint: <rule> ...`), as src/probe.ts,
// test/probe.ts and scripts/probe.ts of a copy of the repository's configuration files: every
// rule that applies to the folder must be reported where the probe says, and nothing else. Every
// configured rule must have a line, and every rule the probe names must still be configured, so
// adding a rule without a line or dropping one fails here.

/** Rules no TypeScript file can break: TypeScript refuses the code they look for (`delete x;`, `'\8'`). */
const UNPROBED = new Set(['eslint/no-delete-var', 'eslint/no-nonoctal-decimal-escape']);

/** The repository's files that decide what the lint reads and how, copied as they are. */
const CONFIGURATION = ['.oxlintrc.json', 'scripts/house-lint-rules.mjs', 'tsconfig.json', 'tsconfig.check.json', 'test/tsconfig.json', 'scripts/tsconfig.json'];

/** The folders the probe is linted in, each with its own rules (.oxlintrc.json's overrides) and tsconfig.json. */
const FOLDERS = ['src', 'test', 'scripts'];

type Level = 'error' | 'warn' | 'off';
type RuleSetting = Level | [Level, ...unknown[]];
interface OxlintConfig {
  rules: Record<string, RuleSetting>;
  overrides: Array<{ files: string[]; rules: Record<string, RuleSetting> }>;
}

/** .oxlintrc.json without its whole-line comments (a comment after a value fails to parse, loudly). */
function readConfig(): OxlintConfig {
  const text = fs.readFileSync(path.join(repoRoot, '.oxlintrc.json'), 'utf8');
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, '')) as OxlintConfig;
}

const level = (setting: RuleSetting): Level => (Array.isArray(setting) ? setting[0] : setting);

/** The rules on for a file in `folder`, from the base rules and the overrides for the whole folder. */
function rulesOn(config: OxlintConfig, folder: string): Set<string> {
  const on = new Set(Object.keys(config.rules).filter((rule) => level(config.rules[rule]!) !== 'off'));
  for (const override of config.overrides) {
    if (!override.files.some((pattern) => pattern.startsWith(`${folder}/**`))) continue;
    for (const [rule, setting] of Object.entries(override.rules)) {
      if (level(setting) === 'off') on.delete(rule);
      else on.add(rule);
    }
  }
  return on;
}

/** Every rule the configuration turns on anywhere. */
function configuredRules(config: OxlintConfig): Set<string> {
  const all = [config.rules, ...config.overrides.map((override) => override.rules)];
  return new Set(all.flatMap((rules) => Object.keys(rules).filter((rule) => level(rules[rule]!) !== 'off')));
}

/** The rules each line of the probe names: 1-based line number to rule names. */
function probeExpectations(probe: string): Map<number, string[]> {
  const lines = new Map<number, string[]>();
  probe.split('\n').forEach((line, index) => {
    const named = /\blint: ([a-z/ -]+)$/.exec(line)?.[1];
    if (named !== undefined) lines.set(index + 1, named.trim().split(/\s+/));
  });
  return lines;
}

interface OxlintReport {
  diagnostics: Array<{ code?: string; message: string; filename: string; labels: Array<{ span: { line: number } }> }>;
}

describe('the lint configuration', () => {
  it('reports every configured rule where the probe breaks it, in src/, test/ and scripts/, and nothing else', (t) => {
    const config = readConfig();
    const probe = fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'lint-probe', 'probe.ts'), 'utf8');
    const expectations = probeExpectations(probe);

    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-lint-probe-'));
    t.after(() => fs.rmSync(project, { recursive: true, force: true }));
    for (const file of CONFIGURATION) {
      fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
      fs.copyFileSync(path.join(repoRoot, file), path.join(project, file));
    }
    fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(project, 'node_modules'));
    for (const folder of FOLDERS) {
      fs.mkdirSync(path.join(project, folder), { recursive: true });
      fs.writeFileSync(path.join(project, folder, 'probe.ts'), probe);
    }

    const run = spawnSync(process.execPath, [...scriptArgs(import.meta.url, '../../scripts/lint'), '-f', 'json'], { cwd: project, encoding: 'utf8' });
    if (/type-aware rules are skipped/.test(run.stderr)) {
      t.skip(run.stderr.trim());
      return;
    }
    assert.equal(run.status, 1, `the probe must fail the lint: ${run.stderr}`);
    const report = JSON.parse(run.stdout) as OxlintReport;
    const reported = new Set(
      report.diagnostics.map((d) => {
        const rule = d.code?.replace(/^(\w+)\((.*)\)$/, '$1/$2') ?? `(no rule: ${d.message})`;
        return `${path.dirname(d.filename)}:${d.labels[0]?.span.line ?? 0} ${rule}`;
      }),
    );
    const expected = new Set(
      FOLDERS.flatMap((folder) => {
        const on = rulesOn(config, folder);
        return [...expectations].flatMap(([line, rules]) => rules.filter((rule) => on.has(rule)).map((rule) => `${folder}:${line} ${rule}`));
      }),
    );
    assert.deepEqual([...expected].filter((finding) => !reported.has(finding)).sort(), [], 'findings the probe expects that the lint did not report');
    assert.deepEqual([...reported].filter((finding) => !expected.has(finding)).sort(), [], 'findings the lint reported that the probe does not name');

    const probed = new Set([...expectations.values()].flat());
    const configured = configuredRules(config);
    const unprobed = [...configured].filter((rule) => !probed.has(rule) && !UNPROBED.has(rule));
    assert.deepEqual(unprobed, [], 'each configured rule needs a line in test/fixtures/lint-probe/probe.ts');
    const dropped = [...probed].filter((rule) => !configured.has(rule));
    assert.deepEqual(dropped, [], 'rules the probe breaks that .oxlintrc.json no longer turns on');
  });
});

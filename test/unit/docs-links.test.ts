import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../support/server-entry.js';

// Every relative link in the README and docs/ reaches a file or folder of the
// repository, and every #anchor a heading of the page it names (GitHub's
// heading ids). Every docs/ page a comment in src/ or scripts/ cites exists
// too, with the section it quotes.

function markdownFiles(): string[] {
  const files = ['README.md', 'CHANGELOG.md', path.join('policies', 'README.md')].filter((f) => fs.existsSync(path.join(repoRoot, f)));
  for (const name of fs.readdirSync(path.join(repoRoot, 'docs')).sort()) if (name.endsWith('.md')) files.push(path.join('docs', name));
  return files;
}

/** The text outside fenced code blocks, where links and headings are read. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```[ \t]*$/gm, '');
}

/** GitHub's heading id: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const text = match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    ids.add(count === 0 ? base : `${base}-${count}`);
  }
  return ids;
}

function headings(markdown: string): string[] {
  return [...prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)].map((m) => m[1]!);
}

interface Link {
  file: string;
  target: string;
}

function relativeLinks(file: string): Link[] {
  const text = prose(fs.readFileSync(path.join(repoRoot, file), 'utf8'));
  const links: Link[] = [];
  for (const match of text.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    links.push({ file, target });
  }
  return links;
}

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(full));
    else if (entry.name.endsWith('.ts')) found.push(full);
  }
  return found;
}

describe('documentation links', () => {
  const files = markdownFiles();

  it('reads the README and every docs/ page', () => {
    assert.ok(files.includes('README.md'));
    assert.ok(files.filter((f) => f.startsWith('docs')).length >= 12, files.join(', '));
  });

  it('every relative link resolves, and every #anchor names a heading', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const { target } of relativeLinks(file)) {
        checked++;
        const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = pathPart === '' ? path.join(repoRoot, file) : path.resolve(path.dirname(path.join(repoRoot, file)), decodeURIComponent(pathPart));
        if (!resolved.startsWith(repoRoot + path.sep) && resolved !== repoRoot) {
          broken.push(`${file}: ${target} leaves the repository`);
          continue;
        }
        if (!fs.existsSync(resolved)) {
          broken.push(`${file}: ${target} (no ${path.relative(repoRoot, resolved)})`);
          continue;
        }
        if (anchor !== undefined) {
          if (!resolved.endsWith('.md')) {
            broken.push(`${file}: ${target} has an anchor into a file that is not markdown`);
            continue;
          }
          const ids = headingIds(fs.readFileSync(resolved, 'utf8'));
          if (!ids.has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${path.relative(repoRoot, resolved)})`);
        }
      }
    }
    assert.ok(checked > 20, `found ${checked} relative links`);
    assert.deepEqual(broken, []);
  });

  it('derives heading ids as GitHub does', () => {
    assert.ok(headingIds("# Node's permission model: evaluated, not adopted\n").has('nodes-permission-model-evaluated-not-adopted'));
    assert.ok(headingIds('## Tools and resources\n## Tools and resources\n').has('tools-and-resources-1'));
    assert.ok(!headingIds('```\n# not a heading\n```\n').has('not-a-heading'));
  });

  it('every docs/ page a source comment cites exists, with the section it quotes', () => {
    const problems: string[] = [];
    let cited = 0;
    for (const file of [...sourceFiles(path.join(repoRoot, 'src')), ...sourceFiles(path.join(repoRoot, 'scripts'))]) {
      // Comments wrap across lines: join them before reading a citation.
      const text = fs.readFileSync(file, 'utf8').replace(/\n[ \t]*(\/\/|\*)[ \t]?/g, ' ');
      for (const match of text.matchAll(/\bdocs\/([a-z0-9-]+\.md)(?:, "([^"]+)")?/g)) {
        // Symbiont's own docs/ (its crash-inspection.md, say) are cited as facts about Symbiont, not ours.
        const around = text.slice(Math.max(0, match.index - 40), match.index + match[0].length + 40);
        if (/Symbiont/.test(around)) continue;
        cited++;
        const doc = path.join(repoRoot, 'docs', match[1]!);
        const where = path.relative(repoRoot, file);
        if (!fs.existsSync(doc)) {
          problems.push(`${where} cites docs/${match[1]}, which does not exist`);
          continue;
        }
        const section = match[2];
        if (section !== undefined && !headings(fs.readFileSync(doc, 'utf8')).some((h) => h.startsWith(section))) {
          problems.push(`${where} cites docs/${match[1]}, "${section}", which has no such section`);
        }
      }
    }
    assert.ok(cited > 0, `found ${cited} citations of docs/ in comments`);
    assert.deepEqual(problems, []);
  });
});

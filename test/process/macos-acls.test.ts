import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkReport, makeTrustedProject, refusedLevel, SOUND_REPORT, TRUSTED_LEVELS, type TrustedLevel } from '../support/trusted-project.js';

// macOS, without root: an ACL allow entry for another user (chmod +a, as
// Finder's "Apply to enclosed items" leaves them) on the project root, on
// policies/, on a policy file, on agents/ and on the other levels the server
// trusts is refused, naming the path and the fix that removes it (chmod -N on
// the root and on a file, chmod -R -N on a folder, where the entries inside
// often carry the same writer); a deny-only entry passes, as it grants
// nothing; a folder writable by staff, every local user's primary group, is
// refused with chmod -R g-w. `symbi check` is run on each project, as a user
// would. Elsewhere the suite skips: macOS ACLs exist only there.

const skip = process.platform === 'darwin' ? false : 'skipped: macOS ACLs (chmod +a) and Open Directory groups are tested on macOS';

/** chmod +a permissions that let another user write the level: a folder's entries, a file's data. */
const WRITE: Record<TrustedLevel, string> = {
  '.': 'add_file,add_subdirectory,delete_child',
  agents: 'add_file,add_subdirectory,delete_child',
  policies: 'add_file,add_subdirectory,delete_child',
  'agents/assistant.symbi': 'write,append',
  'AGENTS.md': 'write,append',
  'policies/respond.cedar': 'write,append',
};
const FOLDERS: readonly TrustedLevel[] = ['agents', 'policies'];

describe('macOS: ACL entries and groups on everything the server trusts', { skip }, () => {
  let base = '';

  before(() => {
    base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-macos-acls-')));
    fs.chmodSync(base, 0o755);
  });

  after(() => {
    // Entries are removed first: a deny entry can forbid the removal.
    if (base !== '') {
      execFileSync('/bin/chmod', ['-R', '-N', base]);
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a sound project is sound, and the ACL reader passed its proof', async () => {
    const report = await checkReport(makeTrustedProject(base), base);
    for (const line of SOUND_REPORT) assert.match(report, line, report);
    assert.doesNotMatch(report, /ACL reader/, report);
  });

  it('an allow entry for another user is refused on each level, naming the path and the fix', async () => {
    const results = await Promise.all(
      TRUSTED_LEVELS.map(async (level) => {
        const dir = makeTrustedProject(base, `chmod +a "nobody allow ${WRITE[level]}" '${level}'`);
        return { level, dir, report: await checkReport(dir, base) };
      }),
    );
    for (const { level, dir, report } of results) {
      const at = level === '.' ? dir : `${dir}/${level}`;
      const fix = FOLDERS.includes(level) ? `chmod -R -N ${at}` : `chmod -N ${at}`;
      // The policy mode rule speaks first where it applies; an ACL adds no mode bit, so here the ACL rule speaks.
      assert.match(report, refusedLevel(level, dir, 'cannot be proved safe: its ACL has an allow entry \\(ls -led shows them\\)', fix), `${level}:\n${report}`);
    }
  });

  it('a deny-only entry grants nothing: the project is sound', async () => {
    const change = TRUSTED_LEVELS.map((level) => `chmod +a "nobody deny ${WRITE[level]}" '${level}' && chmod +a "everyone deny delete" '${level}'`).join(
      ' && ',
    );
    const report = await checkReport(makeTrustedProject(base, change), base);
    for (const line of SOUND_REPORT) assert.match(report, line, report);
  });

  it('a folder writable by staff (0775) is refused with chmod -R g-w; the root with chmod g-w', async () => {
    for (const level of ['agents', 'policies', '.'] as const) {
      const dir = makeTrustedProject(base, `chgrp staff '${level}' && chmod 775 '${level}'`);
      const report = await checkReport(dir, base);
      const at = level === '.' ? dir : `${dir}/${level}`;
      // policies/ keeps its own rule besides (no group write bit at all), which speaks first.
      const expected =
        level === 'policies'
          ? refusedLevel(level, dir, 'writable by its group', `chmod -R go-w ${at}`)
          : refusedLevel(
              level,
              dir,
              'is writable by group staff \\(mode 0775\\), the primary group macOS gives every local user',
              `chmod${level === '.' ? '' : ' -R'} g-w ${at}`,
            );
      assert.match(report, expected, `${level}:\n${report}`);
    }
  });
});

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkReport, makeTrustedProject, refusedLevel, SOUND_REPORT, TRUSTED_LEVELS, type TrustedLevel } from '../support/trusted-project.js';
import { aclProofRequired, REQUIRED_ROUTES_ENV } from '../support/route-required.js';

// FreeBSD, as root: on a ZFS scratch pool (a file-backed pool made here, so
// the suite does not depend on how the machine's disks are laid out), an
// NFSv4 allow entry for another user (setfacl -m u:nobody:write_data::allow)
// on each level the server trusts is refused, naming the path and the fix
// (setfacl -b, recursive on a folder); the same entry as deny passes. The
// reader reads each entry (the proof's controls stand behind it). Where the
// pool cannot be made the suite skips, unless SYMBI_TEST_REQUIRED_ROUTES
// names acl, when it fails. Elsewhere it skips: these ACLs are FreeBSD's.

const skip = (() => {
  if (process.platform !== 'freebsd') return 'skipped: FreeBSD NFSv4 ACLs (setfacl on ZFS) are tested on FreeBSD';
  if (process.getuid?.() !== 0) return 'skipped: making a ZFS scratch pool needs root';
  return false;
})();

/** setfacl permissions that let another user write the level: a folder's entries, a file's data. */
const WRITE: Record<TrustedLevel, string> = {
  '.': 'write_data/append_data/delete_child',
  agents: 'write_data/append_data/delete_child',
  policies: 'write_data/append_data/delete_child',
  'agents/assistant.symbi': 'write_data/append_data',
  'AGENTS.md': 'write_data/append_data',
  'policies/respond.cedar': 'write_data/append_data',
};
const FOLDERS: readonly TrustedLevel[] = ['agents', 'policies'];

describe('FreeBSD: NFSv4 ACL entries on everything the server trusts', { skip }, () => {
  const pool = `symbi${randomBytes(3).toString('hex')}`;
  // Beside the root file system, not in TMPDIR (the CI job points TMPDIR at a ZFS dataset: a pool on a file in ZFS can deadlock).
  const image = path.join('/var/tmp', `${pool}.img`);
  const mount = `/${pool}`;
  let made = false;
  let noPool = 'no ZFS pool';
  let base = '';

  before(() => {
    spawnSync('kldload', ['-n', 'zfs'], { stdio: 'ignore' });
    fs.writeFileSync(image, '');
    fs.truncateSync(image, 256 * 1024 * 1024);
    const create = spawnSync('zpool', ['create', '-m', mount, pool, image], { encoding: 'utf8' });
    if (create.status !== 0) {
      const why = `a file-backed ZFS pool cannot be made here (zpool create: ${create.stderr.trim() || create.error?.message})`;
      if (aclProofRequired()) throw new Error(`${why}; ${REQUIRED_ROUTES_ENV} names acl, so this fails instead of skipping`);
      noPool = why;
      return;
    }
    made = true;
    base = fs.realpathSync(fs.mkdtempSync(path.join(mount, 'writers-')));
    fs.chmodSync(base, 0o755);
  });

  after(() => {
    if (made) execFileSync('zpool', ['destroy', '-f', pool]);
    fs.rmSync(image, { force: true });
  });

  it('a sound project on ZFS is sound (its trivial NFSv4 ACLs are read, entry by entry)', async (t) => {
    if (!made) return t.skip(noPool);
    const report = await checkReport(makeTrustedProject(base), base);
    for (const line of SOUND_REPORT) assert.match(report, line, report);
    assert.doesNotMatch(report, /ACL reader/, report);
  });

  it('an allow entry for another user is refused on each level, naming the path and setfacl -b', async (t) => {
    if (!made) return t.skip(noPool);
    const results = await Promise.all(
      TRUSTED_LEVELS.map(async (level) => {
        const dir = makeTrustedProject(base, `setfacl -m 'u:nobody:${WRITE[level]}::allow' '${level}'`);
        return { level, dir, report: await checkReport(dir, base) };
      }),
    );
    for (const { level, dir, report } of results) {
      const at = level === '.' ? dir : `${dir}/${level}`;
      const fix = `setfacl${FOLDERS.includes(level) ? ' -R' : ''} -b ${at}`;
      const why = 'is writable by user nobody \\(uid 65534\\) through its NFSv4 ACL entry allowing user:65534 access mask 0x[0-9a-f]+';
      assert.match(report, refusedLevel(level, dir, why, fix), `${level}:\n${report}`);
    }
  });

  it('the same entry as deny grants nothing: the project is sound', async (t) => {
    if (!made) return t.skip(noPool);
    const change = TRUSTED_LEVELS.map((level) => `setfacl -m 'u:nobody:${WRITE[level]}::deny' '${level}'`).join(' && ');
    const report = await checkReport(makeTrustedProject(base, change), base);
    for (const line of SOUND_REPORT) assert.match(report, line, report);
  });
});

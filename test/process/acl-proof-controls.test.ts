import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { symbiBin } from '../support/server-entry.js';
import { aclProofRequired, REQUIRED_ROUTES_ENV } from '../support/route-required.js';
import { namespaceSkip } from '../support/mount-namespace.js';

// The ACL reader's proof (src/shared/storage/directory-acl.ts), run as the
// server runs it: `symbi route-proof acl` in a child process. On each platform
// it sets a positive control (entries that grant, which must be read back as
// set) and a negative one (entries that only deny, which must be read and must
// not grant), so a reader that never sees an entry fails here. Where
// SYMBI_TEST_REQUIRED_ROUTES names `acl` (every CI job), a proof that fails or
// whose controls could not run (a temporary directory without ACLs) fails the
// suite; elsewhere that is a skip with the reason. FreeBSD's job points TMPDIR
// at a ZFS dataset (test/process/freebsd-acls.test.ts makes its own).

/** What `symbi route-proof acl` answered: its JSON line, and the scratch folders it left in `tmp`. */
function proveIn(tmp: string): { answer: Answer; left: string[] } {
  const run = spawnSync(process.execPath, [symbiBin, 'route-proof', 'acl'], { env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const answer = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as Answer;
  return { answer, left: fs.readdirSync(tmp).filter((name) => name.startsWith('symbi-acl-proof-')) };
}

type Answer = { ok: boolean; reason?: string; controls?: number };

/** What the suite makes of an answer: pass, skip (with why) or fail (with why), as `required` says. */
function verdict(answer: Answer, tmp: string, required: boolean): { pass: true } | { skip: string } | { fail: string } {
  if (!answer.ok) {
    if (required) return { fail: `the ACL proof failed though ${REQUIRED_ROUTES_ENV} requires it: ${answer.reason}` };
    return { skip: `the ACL reader cannot be proven here: ${answer.reason}` };
  }
  if ((answer.controls ?? 0) < 2) {
    const why = `${tmp}'s file system took no ACL, so the controls could not run (${answer.controls ?? 0} ran)`;
    if (required) return { fail: `${why}; ${REQUIRED_ROUTES_ENV} requires them: run the suite with TMPDIR on a file system with ACLs` };
    return { skip: why };
  }
  return { pass: true };
}

describe('the ACL proof sets entries that must be seen and entries that must not, on this platform', () => {
  it('passes, with its positive and negative controls run, and leaves no scratch folder', (t) => {
    const tmp = fs.mkdtempSync(path.join(process.env.TMPDIR ?? os.tmpdir(), 'symbi-acl-controls-'));
    try {
      const { answer, left } = proveIn(tmp);
      assert.deepEqual(left, [], 'the scratch folder is removed whatever entries it held');
      const outcome = verdict(answer, tmp, aclProofRequired());
      if ('fail' in outcome) assert.fail(outcome.fail);
      if ('skip' in outcome) return t.skip(outcome.skip);
      assert.ok(answer.controls! >= 2, 'a positive and a negative control ran');
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  // Linux, as root: a TMPDIR on ramfs (no extended attributes) takes no ACL, so no control runs; the proof still
  // passes (the reader says such a file system has none it can read), and the suite fails where acl is required.
  const noRamfs = process.platform !== 'linux' ? 'a ramfs TMPDIR is tried on Linux' : namespaceSkip();
  it('where the temporary directory takes no ACL, no control runs, and a required proof fails the suite', { skip: noRamfs }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-acl-ramfs-'));
    try {
      const script = `mount -t ramfs none '${dir}' && chmod 1777 '${dir}' && TMPDIR='${dir}' '${process.execPath}' '${symbiBin}' route-proof acl`;
      const run = spawnSync('unshare', ['-m', 'sh', '-c', script], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      const answer = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as Answer;
      assert.deepEqual(answer, { ok: true, controls: 0 });
      assert.match(
        (verdict(answer, dir, true) as { fail: string }).fail,
        /took no ACL, so the controls could not run \(0 ran\); SYMBI_TEST_REQUIRED_ROUTES requires them/,
      );
      assert.match((verdict(answer, dir, false) as { skip: string }).skip, /took no ACL/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

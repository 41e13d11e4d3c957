import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { symbiBin } from '../support/server-entry.js';
import { aclProofRequired, REQUIRED_ROUTES_ENV } from '../support/route-required.js';

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
function proveIn(tmp: string): { answer: { ok: boolean; reason?: string; controls?: number }; left: string[] } {
  const run = spawnSync(process.execPath, [symbiBin, 'route-proof', 'acl'], { env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const answer = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as { ok: boolean; reason?: string; controls?: number };
  return { answer, left: fs.readdirSync(tmp).filter((name) => name.startsWith('symbi-acl-proof-')) };
}

describe('the ACL proof sets entries that must be seen and entries that must not, on this platform', () => {
  it('passes, with its positive and negative controls run, and leaves no scratch folder', (t) => {
    const tmp = fs.mkdtempSync(path.join(process.env.TMPDIR ?? os.tmpdir(), 'symbi-acl-controls-'));
    try {
      const { answer, left } = proveIn(tmp);
      assert.deepEqual(left, [], 'the scratch folder is removed whatever entries it held');
      const required = aclProofRequired();
      if (!answer.ok) {
        if (required) assert.fail(`the ACL proof failed though ${REQUIRED_ROUTES_ENV} requires it: ${answer.reason}`);
        t.skip(`the ACL reader cannot be proven here: ${answer.reason}`);
        return;
      }
      if ((answer.controls ?? 0) < 2) {
        const why = `${tmp}'s file system took no ACL, so the controls could not run (${answer.controls ?? 0} ran)`;
        if (required) assert.fail(`${why}; ${REQUIRED_ROUTES_ENV} requires them: run the suite with TMPDIR on a file system with ACLs`);
        t.skip(why);
        return;
      }
      assert.ok(answer.controls! >= 2, 'a positive and a negative control ran');
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

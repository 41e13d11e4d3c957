import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { symbiBin } from '../support/server-entry.js';
import { providerEnv } from '../support/server.js';
import { checkReport, invokeInProcess } from '../support/ownership-sessions.js';
import { directoryWritersProblem, type WriterCheckLevel } from '../../src/shared/storage/directory-ownership.js';
import { ACL_TAG, type DirectoryAcl, NFS4_ACE_FLAG, NFS4_ACE_TYPE, type PosixAclEntry } from '../../src/shared/storage/directory-acl.js';

// Everything the server trusts below the project root goes through one writer
// check (directory-ownership.ts): agents/ and each agent file, AGENTS.md,
// policies/ and each policy file, .symbiont/ and what it keeps. A real second
// user (useradd) and real POSIX ACLs (setfacl): an ACL entry, a group or an
// other write bit that lets that user write any of them is refused at startup
// (agents/ loads no agents, an agent file or AGENTS.md is left out, a policy
// folder or file denies every response, .symbiont/ is unusable storage), with
// the fix named; an entry the ACL mask takes write from is no writer; a sound
// project still serves. Run as root (the server too, so root's own group has
// no other member); skipped otherwise. What `symbi check` reports and what the
// server answers are built in the test process (ownership-sessions.ts: the
// check's report and the session `symbi mcp` serves, from dist/), as root
// either way; one real `symbi check` shows the command prints that report.

const PERMIT = 'permit(principal, action == Action::"respond", resource);\n';
const ANSWER = 'Hello from the synthetic endpoint.';
const run = promisify(execFile);

const skip = (() => {
  if (process.platform !== 'linux') return 'skipped: POSIX ACLs through setfacl are tested on Linux';
  if (process.getuid?.() !== 0) return 'skipped: creating a second user needs root';
  for (const tool of ['useradd', 'userdel', 'setfacl']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `skipped: ${tool} is not installed${tool === 'setfacl' ? ' (Debian: apt-get install acl)' : ''}`;
    }
  }
  return false;
})();

/** The levels each case is tried on, and what a refusal of each says (`dir` is the project, `bob` the second user). */
const TARGETS = ['agents', 'agents/assistant.symbi', 'AGENTS.md', 'policies', 'policies/respond.cedar'] as const;
type Target = (typeof TARGETS)[number];

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** How `symbi check` reports `target` refused for `why` (a pattern), with `fix` named. */
function refusal(target: Target, dir: string, why: string, fix: string): RegExp {
  const at = escape(`${dir}/${target}`);
  switch (target) {
    case 'agents':
      return new RegExp(`warn +agents/ can be changed by another user, so no agents were loaded: ${at} ${why}.*\\(fix: ${fix}\\)`);
    case 'agents/assistant.symbi':
      return new RegExp(`warn +left out agents/assistant\\.symbi: ${at} ${why}.*\\(fix: ${fix}\\)`);
    case 'AGENTS.md':
      return new RegExp(`warn +left out: AGENTS\\.md: ${at} ${why}.*\\(fix: ${fix}\\)`);
    case 'policies':
      return new RegExp(`FAIL +the policy set denies every response: policies/: .*${why}.*${fix}`);
    case 'policies/respond.cedar':
      return new RegExp(`FAIL +the policy set denies every response: policies/respond\\.cedar: .*${why}.*${fix}`);
  }
}

/** What `symbi check` says of a project where nothing is refused. */
const SOUND = [/ok +assistant \(agents\/assistant\.symbi\): invocable/, /ok +policies\/respond\.cedar: loaded 1 policy/, /ok +\d+ bytes \(limit/];

describe('who can write what the server trusts below the project root', { skip }, () => {
  const tag = randomBytes(3).toString('hex');
  const bob = `symw${tag}`;
  let bobUid = 0;
  let base = '';
  let endpoint: SyntheticEndpoint;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-writers-'));
    fs.chmodSync(base, 0o755);
    execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', bob]);
    bobUid = Number(execFileSync('id', ['-u', bob], { encoding: 'utf8' }).trim());
  });

  after(async () => {
    await endpoint.close();
    fs.rmSync(base, { recursive: true, force: true });
    execFileSync('userdel', [bob], { stdio: 'ignore' });
    try {
      execFileSync('groupdel', [bob], { stdio: 'ignore' });
    } catch {
      // userdel already removed the user's private group
    }
  });

  /** A sound project (0755 folders, 0644 files), then `change` applied with a shell command run in it. */
  function project(change = ''): string {
    const dir = fs.mkdtempSync(path.join(base, 'project-'));
    fs.chmodSync(dir, 0o755);
    fs.mkdirSync(path.join(dir, 'agents'), { mode: 0o755 });
    fs.mkdirSync(path.join(dir, 'policies'), { mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'agents', 'assistant.symbi'), 'agent assistant {}\n', { mode: 0o644 });
    fs.writeFileSync(path.join(dir, 'policies', 'respond.cedar'), PERMIT, { mode: 0o644 });
    fs.writeFileSync(path.join(dir, 'AGENTS.md'), '# Project\n', { mode: 0o644 });
    for (const folder of ['agents', 'policies']) fs.chmodSync(path.join(dir, folder), 0o755);
    for (const file of ['agents/assistant.symbi', 'policies/respond.cedar', 'AGENTS.md']) fs.chmodSync(path.join(dir, file), 0o644);
    if (change !== '') execFileSync('sh', ['-c', change], { cwd: dir });
    return dir;
  }

  const checkEnv = (): Record<string, string> => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base });

  /** What `symbi check --project dir` prints, built in this process. */
  function check(dir: string): Promise<string> {
    return checkReport(dir, checkEnv());
  }

  /** The same report from the real command. */
  async function checkCommand(dir: string): Promise<string> {
    try {
      return (await run(process.execPath, [symbiBin, 'check', '--project', dir], { env: checkEnv(), encoding: 'utf8' })).stdout;
    } catch (err) {
      // No provider is configured, so check always reports a failure; its report is what is judged.
      return (err as { stdout: string }).stdout;
    }
  }

  /**
   * Runs `symbi check` on projects changed by `change(target)` for every target, and gives each
   * target's report. Targets whose refusals hide none of each other's share a project: a folder
   * refused would leave out what it holds, so agents/ and policies/ go in one, the files in them in another.
   */
  async function checkEach(change: (target: Target) => string): Promise<Array<{ target: Target; dir: string; report: string }>> {
    const groups: Target[][] = [
      ['agents', 'AGENTS.md', 'policies'],
      ['agents/assistant.symbi', 'policies/respond.cedar'],
    ];
    assert.deepEqual(groups.flat().sort(), [...TARGETS].sort(), 'every level is tried');
    const checked = await Promise.all(
      groups.map(async (targets) => {
        const dir = project(targets.map(change).join(' && '));
        const report = await check(dir);
        return targets.map((target) => ({ target, dir, report }));
      }),
    );
    return checked.flat();
  }

  it('a sound project serves', async () => {
    const dir = project();
    // The real command once; every other report here is built in process.
    for (const line of SOUND) assert.match(await checkCommand(dir), line);
    for (const line of SOUND) assert.match(await check(dir), line);
    const outcome = await invokeInProcess(dir, { ...providerEnv(endpoint.url), HOME: base }, endpoint);
    assert.equal(outcome.isError, false, `${outcome.text}\n${outcome.stderr}`);
    assert.equal(outcome.text, ANSWER);
  });

  it('an ACL entry giving the second user write is refused on each level, naming the fix', async () => {
    for (const { target, dir, report } of await checkEach((target) => `setfacl -m u:${bob}:rwx ${target}`)) {
      const recursive = target === 'agents' || target === 'policies' ? '-R ' : '';
      // With a POSIX ACL the group bits show the mask; for policies the rule of no group write bit speaks first, and its fix clears the mask.
      const expected = target.startsWith('policies')
        ? refusal(
            target,
            dir,
            `is writable by its group \\(mode 0${target === 'policies' ? '775' : '674'}\\)`,
            escape(`chmod ${recursive}go-w ${dir}/${target}`),
          )
        : refusal(
            target,
            dir,
            `is writable by user ${bob} \\(uid ${bobUid}\\) through its ACL entry user:${bob}:rwx, mask rwx; `,
            escape(`setfacl ${recursive}-x u:${bob} ${dir}/${target}`),
          );
      assert.match(report, expected, `${target}:\n${report}`);
    }
  });

  it('the same entry with write masked out (chmod g-w) is no writer', async () => {
    for (const { target, report } of await checkEach((target) => `setfacl -m u:${bob}:rwx ${target} && chmod g-w ${target}`)) {
      for (const line of SOUND) assert.match(report, line, `${target}:\n${report}`);
      assert.doesNotMatch(report, new RegExp(bob), `${target}:\n${report}`);
    }
  });

  it('a group with the second user as member, given write, is refused on each level', async () => {
    for (const { target, dir, report } of await checkEach((target) => `chgrp ${bob} ${target} && chmod g+w ${target}`)) {
      const mode = target === 'agents' || target === 'policies' ? '0775' : '0664';
      const recursive = target === 'agents' || target === 'policies' ? '-R ' : '';
      const expected = target.startsWith('policies')
        ? refusal(target, dir, `is writable by its group \\(mode ${mode}\\)`, escape(`chmod ${recursive}go-w ${dir}/${target}`))
        : refusal(
            target,
            dir,
            `is writable by group ${bob} \\(mode ${mode}\\), whose members include ${bob}`,
            escape(`chmod ${recursive}g-w ${dir}/${target}`),
          );
      assert.match(report, expected, `${target}:\n${report}`);
    }
  });

  it('write for every user is refused on each level', async () => {
    for (const { target, dir, report } of await checkEach((target) => `chmod o+w ${target}`)) {
      const mode = target === 'agents' || target === 'policies' ? '0757' : '0646';
      const recursive = target === 'agents' || target === 'policies' ? '-R ' : '';
      const expected = target.startsWith('policies')
        ? refusal(target, dir, `is writable by others \\(mode ${mode}\\)`, escape(`chmod ${recursive}go-w ${dir}/${target}`))
        : refusal(target, dir, `is writable by every user \\(mode ${mode}\\)`, escape(`chmod ${recursive}o-w ${dir}/${target}`));
      assert.match(report, expected, `${target}:\n${report}`);
    }
  });

  it("a folder's default ACL entry giving write counts for what will be created in it; masked out, it does not", async () => {
    // Both folders in one project: neither refusal hides the other.
    const folders = ['agents', 'policies'] as const;
    const dir = project(folders.map((folder) => `setfacl -d -m u:${bob}:rwx ${folder}`).join(' && '));
    const report = await check(dir);
    const masked = await check(project(folders.map((folder) => `setfacl -d -m u:${bob}:rwx,m::r-x ${folder}`).join(' && ')));
    for (const folder of folders) {
      const why = `is writable by user ${bob} \\(uid ${bobUid}\\) through its default ACL entry user:${bob}:rwx, mask rwx; what is created in it inherits the entry`;
      assert.match(report, refusal(folder, dir, why, escape(`setfacl -R -d -x u:${bob} ${dir}/${folder}`)), `${folder}:\n${report}`);
      for (const line of SOUND) assert.match(masked, line, `${folder} masked:\n${masked}`);
    }
  });

  it('.symbiont/ with a default ACL entry for the second user is refused as storage', async () => {
    const dir = project();
    await check(dir); // creates .symbiont/governed/ as a first start would
    execFileSync('setfacl', ['-d', '-m', `u:${bob}:rwx`, path.join(dir, '.symbiont', 'governed')]);
    const report = await check(dir);
    const at = escape(`${dir}/.symbiont/governed`);
    assert.match(
      report,
      new RegExp(
        `FAIL +audit storage unusable: ${at}: unsafe storage: ${at} is writable by user ${bob} .* through its default ACL entry .*\\(fix: setfacl -R -d -x u:${bob} ${at}\\)`,
      ),
      report,
    );
  });

  it('the server leaves out an agent file the second user may write, and answers that the agent is unknown', async () => {
    const dir = project(`setfacl -m u:${bob}:rw agents/assistant.symbi`);
    const outcome = await invokeInProcess(dir, { ...providerEnv(endpoint.url), HOME: base }, endpoint);
    assert.equal(outcome.isError, true, outcome.text);
    assert.match(outcome.text, /unknown agent/);
    assert.equal(outcome.requests, 0);
    assert.match(outcome.stderr, new RegExp(`agents/assistant\\.symbi.*writable by user ${bob}`));
  });
});

describe('the writer rule below the project root, as a pure function', () => {
  // Recorded account files: the server's user and group, and another user with a group of its own.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-writer-rule-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const me = 1000;
  const other = 2000;
  const accounts = (() => {
    const files = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group'), nsswitch: path.join(dir, 'nsswitch.conf') };
    fs.writeFileSync(files.passwd, `me:x:${me}:${me}::/:/bin/sh\nbob:x:${other}:${other}::/:/bin/sh\n`);
    fs.writeFileSync(files.group, `me:x:${me}:\nbob:x:${other}:\n`);
    fs.writeFileSync(files.nsswitch, 'passwd: files\ngroup: files\n');
    return files;
  })();
  const posix = (...entries: Array<[number, number, number?]>): PosixAclEntry[] => entries.map(([tag, perm, id = 0xffffffff]) => ({ tag, perm, id }));
  // What `setfacl -d -m u:bob:rwx` leaves on a 0755 folder: a default ACL, and no access ACL beyond the mode.
  const defaults = (maskPerm: number) =>
    posix([ACL_TAG.USER_OBJ, 7], [ACL_TAG.USER, 7, other], [ACL_TAG.GROUP_OBJ, 5], [ACL_TAG.MASK, maskPerm], [ACL_TAG.OTHER, 5]);
  const judge = (mode: number, acl: DirectoryAcl, level: WriterCheckLevel, platform = 'linux') =>
    directoryWritersProblem({ uid: me, gid: me, mode }, '/p/x', me, { acl, level, accounts, platform });

  it("a folder's default ACL entry counts below the root, only as far as its mask lets it; the root's is not read", () => {
    const withDefaults: DirectoryAcl = { kind: 'posix', entries: [], defaults: defaults(7) };
    assert.match(
      judge(0o40755, withDefaults, 'folder') ?? '',
      /^\/p\/x is writable by user bob \(uid 2000\) through its default ACL entry user:bob:rwx, mask rwx; what is created in it inherits the entry, so another user could write that \(fix: setfacl -R -d -x u:bob \/p\/x\)$/,
    );
    assert.equal(judge(0o40755, { kind: 'posix', entries: [], defaults: defaults(5) }, 'folder'), undefined, 'masked to r-x');
    assert.equal(judge(0o40755, withDefaults, 'holding'), undefined);
  });

  it('a named entry writes only through the mask, both ways', () => {
    const named = (maskPerm: number): DirectoryAcl => ({
      kind: 'posix',
      entries: posix([ACL_TAG.USER_OBJ, 6], [ACL_TAG.USER, 7, other], [ACL_TAG.GROUP_OBJ, 4], [ACL_TAG.MASK, maskPerm], [ACL_TAG.OTHER, 4]),
    });
    assert.match(judge(0o100674, named(7), 'file') ?? '', /writable by user bob .*another user could rewrite it \(fix: setfacl -x u:bob \/p\/x\)$/);
    assert.equal(judge(0o100654, named(5), 'file'), undefined);
  });

  it('an inherit-only NFSv4 allow entry counts on a folder below the root, not on the root or a file', () => {
    const aces = [
      { type: NFS4_ACE_TYPE.ALLOW, flag: 0, mask: 0x1f01ff, who: 'OWNER@' },
      { type: NFS4_ACE_TYPE.ALLOW, flag: NFS4_ACE_FLAG.INHERIT_ONLY | NFS4_ACE_FLAG.FILE_INHERIT, mask: 0x6, who: 'bob@example.com' },
    ];
    assert.match(judge(0o40755, { kind: 'nfs4', aces }, 'folder') ?? '', /writable by principal bob@example\.com through its inherit-only NFSv4 ACL entry/);
    assert.equal(judge(0o40755, { kind: 'nfs4', aces }, 'holding'), undefined);
    assert.equal(judge(0o100644, { kind: 'nfs4', aces }, 'file'), undefined);
  });

  it('the sticky bit excuses others writing a folder below the root, as it does not for the root', () => {
    assert.equal(judge(0o41777, { kind: 'none' }, 'holding'), undefined);
    assert.match(judge(0o41757, { kind: 'none' }, 'folder') ?? '', /^\/p\/x is writable by every user \(mode 1757\); .* \(fix: chmod -R o-w \/p\/x\)$/);
  });

  it('an ACL this server does not interpret is removed recursively from a folder, with the platform command', () => {
    const distrusted: DirectoryAcl = { kind: 'distrusted', why: 'its ACL has an allow entry' };
    assert.match(judge(0o40755, distrusted, 'folder', 'darwin') ?? '', /\(fix: chmod -R -N \/p\/x\)$/);
    assert.match(judge(0o40755, distrusted, 'folder', 'freebsd') ?? '', /\(fix: setfacl -R -b \/p\/x\)$/);
    assert.match(judge(0o100644, distrusted, 'file', 'darwin') ?? '', /\(fix: chmod -N \/p\/x\)$/);
  });

  it('macOS: a folder below the root writable by staff is refused, as the root is', () => {
    // A Mac whose local directory holds staff with nobody listed: staff is still every new local user's primary group.
    const macAccounts = { searchPath: ['/Local/Default'], users: [], groups: [{ name: 'staff', gid: 20, members: [], memberGuids: [], nested: [] }] };
    const staff = directoryWritersProblem({ uid: me, gid: 20, mode: 0o40775 }, '/p/x', me, { level: 'folder', accounts, platform: 'darwin', macAccounts });
    assert.match(staff ?? '', /writable by group staff \(mode 0775\), the primary group macOS gives every local user; .*\(fix: chmod -R g-w \/p\/x\)$/);
  });
});

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { pinProject } from '../../src/shared/confinement/index.js';
import { directoryWritersProblem, projectDirectoriesProblem } from '../../src/shared/storage/directory-ownership.js';
import { type AccountFiles, unreadAccountFiles } from '../../src/shared/storage/local-accounts.js';
import { type DirectoryAcl, NFS4_ACE_FLAG, parseNfs4Acl, parsePosixAcl } from '../../src/shared/storage/directory-acl.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { symbiBin } from '../support/server-entry.js';
import { invokeOnce, type InvokeOutcome, providerEnv } from '../support/server.js';
import { invokeInProcess, type SessionHost, sessionHostUnreachable, startSessionHost } from '../support/ownership-sessions.js';

// A project folder another local user can change must never yield a permissive
// answer. A shared project root (owner alice, group team with a second member
// bob, mode 2775 as umask 002 leaves it): bob cannot touch policies/ but can
// `mv policies policies-off` in the root. `symbi mcp`, run as alice over stdio
// against the synthetic endpoint, must then deny every response, naming the
// root and the fix, and refuse its audit storage, rather than apply "no policy
// files: default permission". A root whose group is alice's own private group
// (no other member) is sound. Writers count as the kernel counts them: an ACL
// entry (setfacl) hidden behind mode bits that show only the mask, a second
// /etc/group line with the same gid (groupadd -o), a group some users get from
// a directory service. A directory alice may search but not read (0711) holds
// her project soundly. Real users and groups (useradd, gpasswd), real modes and
// ACLs, and a real rename by the second user; /etc/group and
// /etc/nsswitch.conf are changed only in a private mount namespace, over a
// bind-mounted copy.
//
// What the server decides is the startup snapshot's logic, judged for the
// user it runs as: the first case runs a real `symbi mcp` (and `symbi
// schemapin`) as alice; the other cases as alice are served one after another
// by one session host process running as alice (ownership-sessions.ts: the
// session `symbi mcp` serves, from dist/), and those as root in the test
// process. A changed /etc file needs a mount namespace, so those cases each
// run a real `symbi mcp` in one.

const FORBID_HELLO = 'forbid(principal, action == Action::"respond", resource) when { context.response.content like "*Hello*" };\n';
const PERMIT = 'permit(principal, action == Action::"respond", resource);\n';
const ANSWER = 'Hello from the synthetic endpoint.';

const notRoot = process.getuid?.() !== 0 ? 'skipped: creating users and groups and running the server as one needs root' : false;
const tools = (() => {
  if (notRoot) return notRoot;
  for (const tool of ['useradd', 'userdel', 'groupadd', 'groupdel', 'gpasswd', 'setpriv', 'runuser']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `skipped: ${tool} is not installed`;
    }
  }
  return false;
})();
const noAclTools = (() => {
  if (tools) return tools;
  try {
    execFileSync('sh', ['-c', 'command -v setfacl'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'skipped: setfacl is not installed (Debian: apt-get install acl)';
  }
})();
const noNamespace = tools || (namespaceSkip() ? `skipped: ${namespaceSkip()}` : false);

describe('a project folder another user can change', () => {
  let endpoint: SyntheticEndpoint;
  let base = '';
  /** Why the test user cannot run this checkout's server (e.g. a clone under a 0700 /root), or false. */
  let unreachable: string | false = false;
  const tag = randomBytes(3).toString('hex');
  const alice = `syma${tag}`;
  const bob = `symb${tag}`;
  const team = `symt${tag}`;
  /** A group with no member at all, for a root-owned project the server runs on as root. */
  const lone = `symg${tag}`;

  before(async () => {
    endpoint = await startSyntheticEndpoint();
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-owners-'));
    fs.chmodSync(base, 0o755);
    if (tools) return;
    for (const user of [alice, bob]) execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', user]);
    execFileSync('groupadd', [team]);
    execFileSync('groupadd', [lone]);
    for (const user of [alice, bob]) execFileSync('gpasswd', ['--add', user, team], { stdio: 'ignore' });
    // Alice runs both the server (symbiBin, maybe an installed package) and the session host (this checkout's build).
    const probe = spawnSync('runuser', ['-u', alice, '--', process.execPath, symbiBin, '--version'], { encoding: 'utf8' });
    if (probe.status !== 0) unreachable = `skipped: another user cannot run ${process.execPath} ${symbiBin} (${probe.stderr.trim().split('\n')[0]})`;
    else {
      const host = sessionHostUnreachable(asUser(alice));
      if (host) unreachable = `skipped: ${host}`;
    }
  });

  after(async () => {
    // Everything is undone whatever failed: a failed close must neither leave the endpoint open (it
    // would keep this file's process alive) nor leave accounts behind; a failure is reported after.
    const closed = await Promise.allSettled([aliceHost?.close(), endpoint.close()]);
    fs.rmSync(base, { recursive: true, force: true });
    if (!tools) {
      for (const user of [alice, bob]) execFileSync('userdel', [user], { stdio: 'ignore' });
      for (const group of [team, lone, alice, bob]) {
        try {
          execFileSync('groupdel', [group], { stdio: 'ignore' });
        } catch {
          // userdel already removed the user's private group
        }
      }
    }
    for (const result of closed) if (result.status === 'rejected') throw result.reason;
  });

  /** A project at `base/name`, owned by `owner`:`group` with the root's `mode`, its policies sound (0755 folder, 0644 file). */
  function makeProject(name: string, policy: string, mode: number, owner?: { user: string; group: string }): string {
    const root = path.join(base, name);
    fs.mkdirSync(path.join(root, 'agents'), { recursive: true });
    fs.mkdirSync(path.join(root, 'policies'));
    fs.writeFileSync(path.join(root, 'agents', 'assistant.symbi'), 'agent assistant {}\n');
    fs.writeFileSync(path.join(root, 'policies', 'respond.cedar'), policy);
    fs.chmodSync(path.join(root, 'policies'), 0o755);
    fs.chmodSync(path.join(root, 'policies', 'respond.cedar'), 0o644);
    if (owner) execFileSync('chown', ['-R', `${owner.user}:${owner.group}`, root]);
    fs.chmodSync(root, mode);
    return root;
  }

  const serverEnvironment = (): Record<string, string> => ({ ...providerEnv(endpoint.url), HOME: base });
  const asUser = (user: string): string[] => ['setpriv', '--reuid', user, '--regid', user, '--init-groups'];

  /** A real `symbi mcp` on `project`, run as `runAs` (root when absent) under the `namespace` launcher, asked once. */
  function invokeServer(project: string, runAs?: string, namespace: string[] = []): Promise<InvokeOutcome> {
    const launcher = [...namespace, ...(runAs === undefined ? [] : asUser(runAs))];
    return invokeOnce(project, { env: serverEnvironment(), launcher }, endpoint);
  }

  /** The session host that serves as alice, started at its first use. */
  let aliceHost: SessionHost | undefined;
  const asAlice = (): SessionHost => (aliceHost ??= startSessionHost({ env: serverEnvironment(), launcher: asUser(alice) }, endpoint));

  /** What the server answers on `project` run as `runAs` (alice, or root when absent), in a mount namespace when `namespace` launches one. */
  function invoke(project: string, runAs?: string, namespace: string[] = []): Promise<InvokeOutcome> {
    if (namespace.length > 0) return invokeServer(project, runAs, namespace);
    if (runAs === undefined) return invokeInProcess(project, serverEnvironment(), endpoint);
    assert.equal(runAs, alice, 'the session host serves as alice');
    return asAlice().invoke(project);
  }

  function assertAnswered(outcome: InvokeOutcome): void {
    assert.equal(outcome.isError, false, `${outcome.text}\n${outcome.stderr}`);
    assert.equal(outcome.text, ANSWER);
    assert.equal(outcome.requests, 1);
  }

  /** A copy of `file` with `extra` appended (or `replaced` as its whole text), to bind-mount over it in a private mount namespace. */
  function accountFileCopy(file: string, change: { extra?: string; replaced?: string }): string {
    const copy = path.join(base, `${path.basename(file)}-${randomBytes(3).toString('hex')}`);
    fs.writeFileSync(copy, change.replaced ?? fs.readFileSync(file, 'utf8') + (change.extra ?? ''));
    fs.chmodSync(copy, 0o644);
    return copy;
  }

  /**
   * A launcher that runs its command in a private mount namespace where each
   * `over` file is bind-mounted over its system file, after the shell commands `setup`.
   */
  function inNamespaceWith(over: Record<string, string>, setup: string[] = []): string[] {
    const mounts = Object.entries(over).map(([system, copy]) => `mount --bind '${copy}' '${system}'`);
    return ['unshare', '-m', 'sh', '-c', `${[...setup, ...mounts].join(' && ')} && exec "$0" "$@"`];
  }

  function assertRefusedNaming(outcome: InvokeOutcome, named: RegExp): void {
    assert.equal(outcome.isError, true, outcome.text);
    assert.match(outcome.text, /denies every response/);
    assert.match(outcome.text, named);
    assert.doesNotMatch(outcome.text, new RegExp(ANSWER));
    assert.equal(outcome.requests, 0, 'refused before the provider was called');
    assert.doesNotMatch(outcome.stderr, /default permission/);
    const storage = outcome.stderr.split('\n').find((line) => line.includes('audit storage unusable'));
    assert.ok(storage, outcome.stderr);
    assert.match(storage, named);
  }

  it('renaming policies/ away in a root shared with a second group member denies all and refuses the storage', { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('shared', FORBID_HELLO, 0o2775, { user: alice, group: team });
    execFileSync('runuser', ['-u', bob, '--', 'mv', path.join(project, 'policies'), path.join(project, 'policies-off')]);
    assert.equal(fs.existsSync(path.join(project, 'policies')), false, 'the second member could rename policies/');

    const outcome = await invokeServer(project, alice);
    const fix = new RegExp(`${project} is writable by group ${team} \\(mode 2775\\), whose members include ${bob}; .*\\(fix: chmod g-w ${project}\\)`);
    assertRefusedNaming(outcome, fix);
    assert.equal(fs.existsSync(path.join(project, '.symbiont')), false, 'no storage was created in the shared root');

    // The SchemaPin pin store lives there too: bob could erase every pin by renaming .symbiont/ away.
    const pins = spawnSync(
      'setpriv',
      ['--reuid', alice, '--regid', alice, '--init-groups', process.execPath, symbiBin, 'schemapin', 'pins', '--project', project],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base },
      },
    );
    assert.notEqual(pins.status, 0);
    assert.equal(pins.stdout, '');
    assert.match(pins.stderr, new RegExp(`pin store refused: .*\\(fix: chmod g-w ${project}\\)`));
  });

  it('the same shared root denies all even with its policies in place', { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('shared-intact', PERMIT, 0o2775, { user: alice, group: team });
    const outcome = await invoke(project, alice);
    assertRefusedNaming(outcome, new RegExp(`chmod g-w ${project}\\)`));
  });

  it("a group-writable root whose group is the owner's private group (umask 002) is sound", { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('private-group', PERMIT, 0o2775, { user: alice, group: alice });
    const outcome = await invoke(project, alice);
    assert.equal(outcome.isError, false, `${outcome.text}\n${outcome.stderr}`);
    assert.equal(outcome.text, ANSWER);
    assert.equal(outcome.requests, 1);
    assert.equal(fs.readdirSync(path.join(project, '.symbiont', 'governed')).filter((f) => f.endsWith('.jsonl')).length, 1, 'the run was journalled');
  });

  it('a directory above the project owned by another user denies all', { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const holder = path.join(base, 'bobs');
    fs.mkdirSync(holder);
    execFileSync('chown', [`${bob}:${bob}`, holder]);
    fs.chmodSync(holder, 0o755);
    const project = makeProject(path.join('bobs', 'project'), PERMIT, 0o755, { user: alice, group: alice });
    const outcome = await invoke(project, alice);
    assertRefusedNaming(
      outcome,
      new RegExp(`${holder} is owned by uid \\d+ \\(${bob}\\), not by the server's user or root; .*\\(fix: chown ${alice} ${holder}, or move the project\\)`),
    );
  });

  it('an ACL entry that lets a second user write the root denies all, though the mode bits show no other writer', { skip: noAclTools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('acl-user', FORBID_HELLO, 0o755, { user: alice, group: alice });
    execFileSync('setfacl', ['-m', `u:${bob}:rwx`, project]);
    assert.equal(fs.statSync(project).mode & 0o7777, 0o775, "the group bits show the ACL mask, owned by alice's private group");
    execFileSync('runuser', ['-u', bob, '--', 'mv', path.join(project, 'policies'), path.join(project, 'policies-off')]);
    assert.equal(fs.existsSync(path.join(project, 'policies')), false, 'the ACL let bob rename policies/');

    const outcome = await invoke(project, alice);
    assertRefusedNaming(
      outcome,
      new RegExp(
        `${project} is writable by user ${bob} \\(uid \\d+\\) through its ACL entry user:${bob}:rwx, mask rwx; .*\\(fix: setfacl -x u:${bob} ${project}\\)`,
      ),
    );
  });

  it('an ACL entry for a group with a second member denies all', { skip: noAclTools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('acl-group', PERMIT, 0o755, { user: alice, group: alice });
    execFileSync('setfacl', ['-m', `g:${team}:rwx`, project]);
    const outcome = await invoke(project, alice);
    assertRefusedNaming(
      outcome,
      new RegExp(
        `${project} is writable by group ${team} through its ACL entry group:${team}:rwx, mask rwx, whose members include ${bob}; .*\\(fix: setfacl -x g:${team} ${project}\\)`,
      ),
    );
  });

  it("ACL entries that give others no write, or give it to the server's user, are sound", { skip: noAclTools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const project = makeProject('acl-sound', PERMIT, 0o755, { user: alice, group: alice });
    execFileSync('setfacl', ['-m', `u:${bob}:r-x,g:${team}:r-x,u:${alice}:rwx`, project]);
    assertAnswered(await invoke(project, alice));
    // A mask without write takes it away from every named entry.
    const masked = makeProject('acl-masked', PERMIT, 0o755, { user: alice, group: alice });
    execFileSync('setfacl', ['-m', `u:${bob}:rwx,m::r-x`, masked]);
    assertAnswered(await invoke(masked, alice));
  });

  it('a second /etc/group line with the same gid adds a member: the root denies all', { skip: noNamespace }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    // alice's private group, which /etc/group lists with alice alone; the copy adds a line with its gid for bob (groupadd -o).
    const gid = Number(execFileSync('id', ['-g', alice], { encoding: 'utf8' }).trim());
    const alias = `symd${tag}`;
    const group = accountFileCopy('/etc/group', { extra: `${alias}:x:${gid}:${bob}\n` });
    const namespace = inNamespaceWith({ '/etc/group': group });
    const project = makeProject('second-line', FORBID_HELLO, 0o2775, { user: alice, group: alice });
    const moved = spawnSync(
      namespace[0]!,
      [...namespace.slice(1), 'runuser', '-u', bob, '--', 'mv', path.join(project, 'policies'), path.join(project, 'policies-off')],
      { encoding: 'utf8' },
    );
    assert.equal(moved.status, 0, `the second line made bob a member: ${moved.stderr}`);

    const outcome = await invoke(project, alice, namespace);
    assertRefusedNaming(
      outcome,
      new RegExp(
        `${project} is writable by group ${alice} \\(mode 2775\\), whose members include ${bob} \\(through a second /etc/group line for gid ${gid}, "${alias}"\\); .*\\(fix: chmod g-w ${project}\\)`,
      ),
    );
  });

  it('a member by /etc/gshadow only (sg, newgrp) is seen: the root denies all', { skip: noNamespace }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    // A root-owned project whose group has no member in /etc/group; the server runs as root, which can read /etc/gshadow.
    const project = makeProject('gshadow-member', PERMIT, 0o2775, { user: 'root', group: lone });
    assertAnswered(await invoke(project));
    const line = new RegExp(`^${lone}:([^:]*):([^:]*):([^:]*)$`, 'm');
    const system = fs.readFileSync('/etc/gshadow', 'utf8');
    assert.match(system, line, 'groupadd wrote a shadow line');
    const gshadow = accountFileCopy('/etc/gshadow', { replaced: system.replace(line, `${lone}:$1:$2:${bob}`) });
    fs.chmodSync(gshadow, 0o640);
    const namespace = inNamespaceWith({ '/etc/gshadow': gshadow });
    // bob is in no /etc/group line of the group, yet sg lets him in, and he renames policies/.
    const moved = spawnSync(
      namespace[0]!,
      [...namespace.slice(1), 'runuser', '-u', bob, '--', 'sg', lone, '-c', `mv '${project}/policies' '${project}/policies-off'`],
      { encoding: 'utf8' },
    );
    assert.equal(moved.status, 0, `the shadow line made bob a member: ${moved.stderr}`);
    assert.equal(fs.existsSync(path.join(project, 'policies')), false);
    fs.renameSync(path.join(project, 'policies-off'), path.join(project, 'policies'));
    assertRefusedNaming(
      await invoke(project, undefined, namespace),
      new RegExp(
        `${project} is writable by group ${lone} \\(mode 2775\\), whose members include ${bob} \\(listed for "${lone}" in /etc/gshadow only, so newgrp or sg lets them in\\); .*\\(fix: chmod g-w ${project}\\)`,
      ),
    );
  });

  it('a gid spelled 0NNNN on an /etc/group line is that gid for the kernel and for the check', { skip: noNamespace }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const gid = Number(execFileSync('getent', ['group', lone], { encoding: 'utf8' }).split(':')[2]);
    const alias = `symz${tag}`;
    const group = accountFileCopy('/etc/group', { extra: `${alias}:x:0${gid}:${bob}\n` });
    const namespace = inNamespaceWith({ '/etc/group': group });
    const project = makeProject('padded-gid', FORBID_HELLO, 0o2775, { user: 'root', group: lone });
    // glibc reads 0NNNN as NNNN: bob's login gets the group, and he can rename policies/.
    const moved = spawnSync(
      namespace[0]!,
      [...namespace.slice(1), 'runuser', '-u', bob, '--', 'mv', path.join(project, 'policies'), path.join(project, 'policies-off')],
      { encoding: 'utf8' },
    );
    assert.equal(moved.status, 0, `the padded line made bob a member: ${moved.stderr}`);
    fs.renameSync(path.join(project, 'policies-off'), path.join(project, 'policies'));
    assertRefusedNaming(
      await invoke(project, undefined, namespace),
      new RegExp(
        `${project} is writable by group ${lone} \\(mode 2775\\), whose members include ${bob} \\(through a second /etc/group line for gid ${gid}, "${alias}"\\)`,
      ),
    );
  });

  it('symbi check run by a user who cannot read /etc/gshadow says so', { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    if ((fs.statSync('/etc/gshadow', { throwIfNoEntry: false })?.mode ?? 0o004) & 0o004)
      return t.skip('skipped: /etc/gshadow is absent or readable by everyone here');
    const project = makeProject('gshadow-unread', PERMIT, 0o2775, { user: alice, group: alice });
    // The report `symbi check` prints, built by the session host running as alice.
    const check = await asAlice().check(project);
    assert.match(check, /ownership: .* can be changed only by this user and root/, check);
    assert.match(
      check,
      /ownership: could not read \/etc\/gshadow \(EACCES\), so group members and administrators listed only there \(newgrp, sg, gpasswd\) were not counted/,
    );
    // A project no group can write needs no group's members: nothing is said.
    const closed = makeProject('gshadow-unread-closed', PERMIT, 0o755, { user: alice, group: alice });
    const quiet = await asAlice().check(closed);
    assert.doesNotMatch(quiet, /could not read/, quiet);
  });

  it('a group-writable root denies all when the system takes groups from a directory service too', { skip: noNamespace }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const nsswitch = accountFileCopy('/etc/nsswitch.conf', { replaced: 'passwd: files\ngroup: files sss\n' });
    const project = makeProject('directory-service', PERMIT, 0o2775, { user: alice, group: alice });
    const outcome = await invoke(project, alice, inNamespaceWith({ '/etc/nsswitch.conf': nsswitch }));
    assertRefusedNaming(
      outcome,
      new RegExp(
        `${project} is writable by group ${alice} \\(mode 2775\\), and /etc/nsswitch.conf also takes users or groups from sss, which this server does not query, so members besides the server's user cannot be ruled out; .*\\(fix: chmod g-w ${project}\\)`,
      ),
    );
    // Without a group-writable directory, a directory service changes nothing.
    const closed = makeProject('directory-service-closed', PERMIT, 0o755, { user: alice, group: alice });
    assertAnswered(await invoke(closed, alice, inNamespaceWith({ '/etc/nsswitch.conf': nsswitch })));
  });

  it('nss-systemd is trusted only while it serves no user or group records of its own', { skip: noNamespace }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const nsswitch = accountFileCopy('/etc/nsswitch.conf', { replaced: 'passwd: files systemd\ngroup: files systemd\n' });
    const project = makeProject('systemd-records', PERMIT, 0o2775, { user: alice, group: alice });
    // A tmpfs over /run in the namespace stands for a machine with no userdb records, then with one drop-in.
    const emptyRun = inNamespaceWith({ '/etc/nsswitch.conf': nsswitch }, ['mount -t tmpfs none /run']);
    assertAnswered(await invoke(project, alice, emptyRun));
    const record = `/run/userdb/${bob}.user`;
    const withRecord = inNamespaceWith({ '/etc/nsswitch.conf': nsswitch }, [
      'mount -t tmpfs none /run',
      'mkdir /run/userdb',
      `echo '{"userName":"${bob}"}' > ${record}`,
    ]);
    assertRefusedNaming(
      await invoke(project, alice, withRecord),
      new RegExp(
        `${project} is writable by group ${alice} \\(mode 2775\\), and /etc/nsswitch.conf names systemd and nss-systemd reads user and group records from ${record}, which this server does not read`,
      ),
    );
  });

  it('a project under a directory its user may search but not read (0711) is sound', { skip: tools }, async (t) => {
    if (unreachable) return t.skip(unreachable);
    const holder = path.join(base, 'srv');
    fs.mkdirSync(holder);
    fs.chmodSync(holder, 0o711);
    const project = makeProject(path.join('srv', 'project'), PERMIT, 0o755, { user: alice, group: alice });
    const listing = spawnSync('runuser', ['-u', alice, '--', 'ls', holder], { encoding: 'utf8' });
    assert.notEqual(listing.status, 0, 'alice cannot read the holder');
    const outcome = await invoke(project, alice);
    assertAnswered(outcome);
    assert.doesNotMatch(outcome.stderr, /cannot be checked/);
  });

  it('a world-writable root without the sticky bit denies all; with it, the project is sound', async () => {
    const open = makeProject('world', PERMIT, 0o777);
    assertRefusedNaming(
      await invoke(open),
      new RegExp(`${open} is writable by every user \\(mode 0777\\) without the sticky bit; .*\\(fix: chmod o-w ${open}\\)`),
    );
    const sticky = makeProject('world-sticky', PERMIT, 0o1777);
    const outcome = await invoke(sticky);
    assert.equal(outcome.isError, false, `${outcome.text}\n${outcome.stderr}`);
    assert.equal(outcome.text, ANSWER);
  });
});

describe('group members as the local account files list them', () => {
  // A real directory's stat against account files written for the test: who
  // counts as a member is what /etc/group lists plus whose primary group it is.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-accounts-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function problemWith(passwd: string[], group: string[], nsswitch = 'passwd: files\ngroup: files\n'): string | undefined {
    const shared = path.join(dir, 'shared');
    fs.mkdirSync(shared, { recursive: true });
    fs.chmodSync(shared, 0o775);
    const files = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group'), nsswitch: path.join(dir, 'nsswitch.conf') };
    fs.writeFileSync(files.passwd, passwd.join('\n') + '\n');
    fs.writeFileSync(files.group, group.join('\n') + '\n');
    fs.writeFileSync(files.nsswitch, nsswitch);
    const stat = fs.statSync(shared);
    return directoryWritersProblem(stat, shared, stat.uid, { accounts: files, platform: 'linux' });
  }

  const stat = fs.statSync(dir);
  const me = `me:x:${stat.uid}:${stat.gid}::/:/bin/sh`;
  const other = `other:x:${stat.uid + 1000}:${stat.gid}::/:/bin/sh`;

  it('a group with no member but the owner is sound', () => {
    assert.equal(problemWith([me], [`mine:x:${stat.gid}:`]), undefined);
    assert.equal(problemWith([me], [`mine:x:${stat.gid}:me`]), undefined);
  });

  it('a user whose primary group it is counts as a member, though /etc/group lists nobody', () => {
    assert.match(
      problemWith([me, other], [`mine:x:${stat.gid}:`]) ?? '',
      /writable by group mine \(mode 0775\), whose members include other; .*\(fix: chmod g-w /,
    );
  });

  it('a listed member /etc/passwd does not know is another user', () => {
    assert.match(problemWith([me], [`mine:x:${stat.gid}:me,ghost`]) ?? '', /whose members include ghost/);
  });

  it('a group /etc/group does not list cannot be proved safe', () => {
    assert.match(problemWith([me], []) ?? '', new RegExp(`writable by group ${stat.gid} \\(mode 0775\\), which /etc/group does not list`));
  });

  it('every /etc/group line with the gid counts, not only the first', () => {
    assert.match(
      problemWith([me], [`mine:x:${stat.gid}:me`, `alias:x:${stat.gid}:other`]) ?? '',
      /whose members include other \(through a second \/etc\/group line for gid \d+, "alias"\); /,
    );
  });

  it('a group is unsound when NSS takes users or groups from a source this server does not read', () => {
    assert.match(
      problemWith([me], [`mine:x:${stat.gid}:`], 'passwd: files ldap\ngroup: files [NOTFOUND=return] sss # directory\n') ?? '',
      /also takes users or groups from ldap, sss, which this server does not query/,
    );
    assert.match(problemWith([me, '+@staff'], [`mine:x:${stat.gid}:`], 'passwd: compat\ngroup: compat\n') ?? '', /has NIS compat lines/);
    assert.equal(problemWith([me], [`mine:x:${stat.gid}:`], 'passwd: compat\ngroup: compat\n'), undefined);
  });
});

describe('group members as glibc and the shadow group file give them', () => {
  // Account files written for the test, judged against a real directory's status.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-gshadow-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stat = fs.statSync(dir);
  const me = `me:x:${stat.uid}:${stat.gid}::/:/bin/sh`;

  function filesWith(group: string[], gshadow?: string[]): AccountFiles {
    const files: AccountFiles = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group'), nsswitch: path.join(dir, 'nsswitch.conf') };
    fs.writeFileSync(files.passwd, `${me}\n`);
    fs.writeFileSync(files.group, group.join('\n') + '\n');
    fs.writeFileSync(files.nsswitch, 'passwd: files\ngroup: files\n');
    if (gshadow !== undefined) {
      files.gshadow = path.join(dir, 'gshadow');
      fs.writeFileSync(files.gshadow, gshadow.join('\n') + '\n');
    }
    return files;
  }

  function problemWith(group: string[], gshadow?: string[]): string | undefined {
    return directoryWritersProblem({ uid: stat.uid, gid: stat.gid, mode: 0o40775 }, dir, stat.uid, { accounts: filesWith(group, gshadow), platform: 'linux' });
  }

  it('a gid spelled with leading zeros is the same gid, as glibc reads it', () => {
    const padded = String(stat.gid).padStart(6, '0');
    assert.match(problemWith([`mine:x:${padded}:other`]) ?? '', /writable by group mine \(mode 0775\), whose members include other;/);
    assert.match(
      problemWith([`mine:x:${stat.gid}:`, `alias:x:0${stat.gid}:other`]) ?? '',
      /members include other \(through a second \/etc\/group line for gid \d+, "alias"\)/,
    );
    assert.equal(problemWith([`mine:x:${padded}:me`]), undefined);
    // strtoul's leading blank and plus sign too; a line whose gid field is not a number is skipped, as glibc skips it.
    assert.match(problemWith([`mine:x: +${stat.gid}:other`]) ?? '', /members include other/);
    assert.match(problemWith([`mine:x:${stat.gid}x:other`]) ?? '', /which \/etc\/group does not list/);
  });

  it('a member or administrator listed only in /etc/gshadow counts', () => {
    const gshadow = path.join(dir, 'gshadow');
    assert.match(
      problemWith([`mine:x:${stat.gid}:`], ['mine:!::other']) ?? '',
      new RegExp(`members include other \\(listed for "mine" in ${gshadow} only, so newgrp or sg lets them in\\)`),
    );
    assert.match(
      problemWith([`mine:x:${stat.gid}:`], ['mine:!:boss:']) ?? '',
      /members include boss \(an administrator of "mine" in .*gshadow, who can add members with gpasswd\)/,
    );
    // A line for another group's name says nothing of this one.
    assert.equal(problemWith([`mine:x:${stat.gid}:`], ['theirs:!::other']), undefined);
    assert.equal(problemWith([`mine:x:${stat.gid}:`], ['mine:!::me']), undefined);
  });

  it('a group password anyone may type into newgrp is a way in; a locked or empty one is not', () => {
    assert.match(
      problemWith([`mine:x:${stat.gid}:`], ['mine:$6$salt$hash::']) ?? '',
      /which has a password in .*gshadow, so whoever knows it can join with newgrp; .*\(fix: chmod g-w .*, or gpasswd -r mine\)/,
    );
    for (const locked of ['!', '*', '!$6$salt$hash', '']) assert.equal(problemWith([`mine:x:${stat.gid}:`], [`mine:${locked}::`]), undefined, locked);
  });

  it('names a shadow group file that exists but cannot be read, and not one that is absent', () => {
    const files = filesWith([`mine:x:${stat.gid}:`]);
    assert.deepEqual(unreadAccountFiles({ ...files, gshadow: path.join(dir, 'absent') }), []);
    // A directory where the file should be: read() fails (EISDIR) even for root, as EACCES does for other users.
    assert.deepEqual(unreadAccountFiles({ ...files, gshadow: dir }), [`${dir} (EISDIR)`]);
  });
});

describe('the walk checks the directories that hold the pinned project', () => {
  it('a project moved after it was pinned cannot be checked by its old path, and is refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-moved-'));
    try {
      fs.chmodSync(dir, 0o755);
      fs.mkdirSync(path.join(dir, 'before'), { mode: 0o755 });
      const project = pinProject(path.join(dir, 'before'));
      try {
        assert.equal(projectDirectoriesProblem(project), undefined);
        fs.renameSync(path.join(dir, 'before'), path.join(dir, 'after'));
        assert.match(
          projectDirectoriesProblem(project) ?? '',
          new RegExp(`^${path.join(dir, 'before')} cannot be checked: it is not the directory that holds the project .*start the server again`),
        );
      } finally {
        fs.closeSync(project.fd);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Linux ACL extended attribute', () => {
  const entry = (tag: number, perm: number, id: number) => {
    const bytes = Buffer.alloc(8);
    bytes.writeUInt16LE(tag, 0);
    bytes.writeUInt16LE(perm, 2);
    bytes.writeUInt32LE(id, 4);
    return bytes;
  };
  const header = (version: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32LE(version, 0);
    return bytes;
  };

  it('reads version 2 entries', () => {
    const value = Buffer.concat([
      header(2),
      entry(0x01, 7, 0xffffffff),
      entry(0x02, 7, 1234),
      entry(0x04, 5, 0xffffffff),
      entry(0x10, 7, 0xffffffff),
      entry(0x20, 5, 0xffffffff),
    ]);
    assert.deepEqual(parsePosixAcl(value)[1], { tag: 0x02, perm: 7, id: 1234 });
  });

  it('refuses what it cannot read rather than guess', () => {
    assert.throws(() => parsePosixAcl(Buffer.concat([header(3), entry(0x01, 7, 0)])), /format version is 3/);
    assert.throws(() => parsePosixAcl(Buffer.concat([header(2), entry(0x40, 7, 0)])), /unknown tag 0x40/);
    assert.throws(() => parsePosixAcl(Buffer.concat([header(2), Buffer.alloc(5)])), /not a version header followed by 8-byte entries/);
  });
});

describe('NFSv4 ACLs, as a Linux NFSv4 mount exposes them (system.nfs4_acl)', () => {
  // Values built as the attribute holds them (RFC 7530 section 6.2.1, XDR): a big-endian
  // count, then type, flag, access mask and the principal, padded to 4 bytes.
  const ALLOW = 0;
  const DENY = 1;
  // nfs4_getfacl's letters: r 0x1, w 0x2, a 0x4, x 0x20, D 0x40, t 0x80, T 0x100, d 0x10000, c 0x20000, C 0x40000, o 0x80000, y 0x100000.
  const RX = 0x1 | 0x20 | 0x80 | 0x20000 | 0x100000;
  const FULL = RX | 0x2 | 0x4 | 0x40 | 0x100 | 0x10000 | 0x40000 | 0x80000;
  const ace = (type: number, flag: number, mask: number, who: string) => {
    const name = Buffer.from(who, 'utf8');
    const words = Buffer.alloc(16);
    [type, flag, mask, name.length].forEach((value, i) => words.writeUInt32BE(value, i * 4));
    return Buffer.concat([words, name, Buffer.alloc((4 - (name.length % 4)) % 4)]);
  };
  const acl = (...aces: Buffer[]) => {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(aces.length, 0);
    return Buffer.concat([count, ...aces]);
  };
  // What an NFSv4 server shows for a 0755 directory: the mode as three entries.
  const trivial = [ace(ALLOW, 0, FULL, 'OWNER@'), ace(ALLOW, 0, RX, 'GROUP@'), ace(ALLOW, 0, RX, 'EVERYONE@')];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-nfs4-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stat = fs.statSync(dir);
  const accounts = (() => {
    const files = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group'), nsswitch: path.join(dir, 'nsswitch.conf') };
    fs.writeFileSync(files.passwd, `me:x:${stat.uid}:${stat.gid}::/:/bin/sh\nother:x:${stat.uid + 1000}:${stat.gid + 1000}::/:/bin/sh\n`);
    fs.writeFileSync(files.group, `mine:x:${stat.gid}:\n`);
    fs.writeFileSync(files.nsswitch, 'passwd: files\ngroup: files\n');
    return files;
  })();
  const judge = (value: Buffer, mode = 0o40755, groupLine?: string) => {
    if (groupLine !== undefined) fs.writeFileSync(accounts.group, `${groupLine}\n`);
    const parsed: DirectoryAcl = { kind: 'nfs4', aces: parseNfs4Acl(value) };
    try {
      return directoryWritersProblem({ uid: stat.uid, gid: stat.gid, mode }, '/mnt/nfs/project', stat.uid, { acl: parsed, accounts, platform: 'linux' });
    } finally {
      fs.writeFileSync(accounts.group, `mine:x:${stat.gid}:\n`);
    }
  };

  it('parses entries and their padded principals', () => {
    assert.deepEqual(parseNfs4Acl(acl(ace(ALLOW, NFS4_ACE_FLAG.IDENTIFIER_GROUP, 0x6, 'staff@example.com'), ace(DENY, 0, 0x2, 'OWNER@'))), [
      { type: ALLOW, flag: 0x40, mask: 0x6, who: 'staff@example.com' },
      { type: DENY, flag: 0, mask: 0x2, who: 'OWNER@' },
    ]);
  });

  it('refuses what it cannot read rather than guess', () => {
    assert.throws(() => parseNfs4Acl(Buffer.alloc(2)), /ends inside an entry/);
    assert.throws(() => parseNfs4Acl(acl(ace(ALLOW, 0, 1, 'OWNER@')).subarray(0, 22)), /ends inside an entry/);
    assert.throws(() => parseNfs4Acl(Buffer.concat([acl(ace(ALLOW, 0, 1, 'OWNER@')), Buffer.alloc(4)])), /4 bytes after its last entry/);
    const many = Buffer.alloc(8);
    many.writeUInt32BE(1000, 0);
    assert.throws(() => parseNfs4Acl(many), /claims 1000 entries in 8 bytes/);
  });

  it('an ACL that only repeats the mode bits passes', () => {
    assert.equal(judge(acl(...trivial)), undefined);
  });

  it('an entry giving another principal write or delete is refused, naming it', () => {
    assert.match(
      judge(acl(...trivial, ace(ALLOW, 0, 0x2 | 0x4 | 0x40, 'bob@example.com'))) ?? '',
      /\/mnt\/nfs\/project is writable by principal bob@example.com through its NFSv4 ACL entry allowing bob@example.com access mask 0x46, which this server cannot map to local users; .*\(fix: remove the entry with nfs4_setfacl -x \(nfs4_getfacl \/mnt\/nfs\/project lists it\)\)/,
    );
    assert.match(judge(acl(...trivial, ace(ALLOW, NFS4_ACE_FLAG.IDENTIFIER_GROUP, 0x10000, 'team@example.com'))) ?? '', /writable by group team@example.com /);
    assert.match(
      judge(acl(ace(ALLOW, 0, FULL, 'OWNER@'), ace(ALLOW, 0, RX | 0x40, 'EVERYONE@'))) ?? '',
      /writable by every user through its NFSv4 ACL entry allowing EVERYONE@/,
    );
    // Write to the ACL or the owner is a way to the rest.
    assert.match(judge(acl(...trivial, ace(ALLOW, 0, 0x40000, 'AUTHENTICATED@'))) ?? '', /writable by principal AUTHENTICATED@/);
  });

  it('GROUP@ with write is judged like the owning group', () => {
    const groupWrite = acl(ace(ALLOW, 0, FULL, 'OWNER@'), ace(ALLOW, 0, FULL, 'GROUP@'), ace(ALLOW, 0, RX, 'EVERYONE@'));
    assert.equal(judge(groupWrite, 0o40755), undefined, 'a group with no other member');
    assert.match(
      judge(groupWrite, 0o40755, `mine:x:${stat.gid}:other`) ?? '',
      /writable by group mine through its NFSv4 ACL entry allowing GROUP@ .*whose members include other/,
    );
  });

  it('deny, inherit-only and read-only entries give no write', () => {
    assert.equal(judge(acl(...trivial, ace(DENY, 0, FULL, 'bob@example.com'))), undefined);
    assert.equal(judge(acl(...trivial, ace(ALLOW, NFS4_ACE_FLAG.INHERIT_ONLY | 0x3, FULL, 'bob@example.com'))), undefined);
    assert.equal(judge(acl(...trivial, ace(ALLOW, 0, RX, 'bob@example.com'))), undefined);
  });
});

describe('a file system with no ACL this server can read', () => {
  const skip = namespaceSkip();
  it('is named by symbi check, and judged by its mode bits', { skip: skip ? `skipped: ${skip}` : false }, () => {
    // ramfs has no extended attributes at all: both ACL attributes answer EOPNOTSUPP, as a CIFS or FUSE mount's do.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-no-acl-'));
    try {
      const setup = `mount -t ramfs none '${dir}' && chmod 755 '${dir}' && mkdir '${dir}/agents' && echo 'agent assistant {}' > '${dir}/agents/assistant.symbi'`;
      const check = spawnSync('unshare', ['-m', 'sh', '-c', `${setup} && exec "$0" "$@"`, process.execPath, symbiBin, 'check', '--project', dir], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
      });
      assert.match(
        check.stdout,
        new RegExp(`ok +ownership: ${dir} and every directory above it can be changed only by this user and root`),
        check.stdout + check.stderr,
      );
      assert.match(
        check.stdout,
        new RegExp(
          `warn +ownership: ${dir}: its file system \\(ramfs\\) exposes neither a POSIX nor an NFSv4 ACL \\(EOPNOTSUPP\\), so only its mode bits were read; an ACL the file server applies`,
        ),
      );
      assert.equal(check.stdout.match(/exposes neither/g)?.length, 1, 'only the ramfs level is named');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

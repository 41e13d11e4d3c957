import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSyntheticEndpoint, type SyntheticEndpoint } from '../support/synthetic-endpoint.js';
import { makeProject, removeProject } from '../support/project.js';
import { auditOf, providerEnv, type RunningServer, startServer, textOf } from '../support/server.js';
import { inspect, journalsIn, projectPublicKey, runIdOf } from '../support/journal.js';

// invoke_agent on a real full file system mounted as .symbiont/governed: a
// size-limited tmpfs and a loop-mounted ext2 image with 1 KiB blocks. Whatever
// a write error interrupts, every file left behind verifies (inspect exit 0 or
// 2) or is not there at all; a refusal says the storage is full; the server
// keeps serving and recovers once space returns. Mounting needs root (CI runs
// as root); elsewhere the suite skips and says why.

const AGENTS = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'policies/mcp-server/respond.cedar': 'permit(principal, action == Action::"respond", resource);\n',
};
const FILLER = 'filler.bin';
/** The prompt marker that makes the endpoint fill the disk while the provider request is in flight. */
const FILL_DURING_REQUEST = 'fill the disk now';

const notRoot = typeof process.getuid !== 'function' || process.getuid() !== 0;
const missingTools = ['mount', 'umount', 'losetup', 'mkfs.ext2'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);

/** Root alone is not enough in some containers (no CAP_SYS_ADMIN, no loop devices): try it once. */
function cannotMount(): string | false {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-mount-probe-'));
  try {
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'symbi-probe', probe]).status !== 0) return 'cannot mount a tmpfs here (no CAP_SYS_ADMIN?)';
    spawnSync('umount', [probe]);
    if (spawnSync('losetup', ['--find']).status !== 0) return 'no free loop device here';
    return false;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

const skipReason = notRoot
  ? 'needs root to mount a tmpfs and a loop-mounted ext2 image (CI runs as root)'
  : missingTools.length > 0
    ? `needs ${missingTools.join(', ')}`
    : cannotMount();

interface MountedStorage {
  governed: string;
  unmount(): void;
}

function mountTmpfs(governed: string, kib: number): MountedStorage {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${kib}k,mode=0700`, 'symbi-full-disk', governed]);
  return { governed, unmount: () => unmount(governed) };
}

function mountExt2(governed: string, image: string, kib: number): MountedStorage {
  execFileSync('dd', ['if=/dev/zero', `of=${image}`, 'bs=1024', `count=${kib}`], { stdio: 'ignore' });
  // -m 0: no blocks reserved for root, so "full" means full for this (root) process too.
  execFileSync('mkfs.ext2', ['-q', '-F', '-b', '1024', '-m', '0', image], { stdio: 'ignore' });
  const device = execFileSync('losetup', ['--find', '--show', image], { encoding: 'utf8' }).trim();
  try {
    execFileSync('mount', ['-t', 'ext2', device, governed]);
  } catch (err) {
    execFileSync('losetup', ['-d', device]);
    throw err;
  }
  return {
    governed,
    unmount: () => {
      try {
        unmount(governed);
      } finally {
        spawnSync('losetup', ['-d', device]);
      }
    },
  };
}

function unmount(target: string): void {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    if (spawnSync('umount', [target]).status === 0) return;
    execFileSync('sleep', ['0.1']);
  }
  spawnSync('umount', ['-l', target]);
}

/** Private storage as the server expects it: the directory 0700, the signing key 0600. */
function prepareStorage(governed: string): void {
  fs.chmodSync(governed, 0o700);
  fs.writeFileSync(path.join(governed, 'audit-signing.key'), crypto.randomBytes(32), { mode: 0o600 });
}

/** Fills the file system until a write fails, then frees `leaveBytes` (rounded to whole blocks) again. */
function fill(governed: string, leaveBytes = 0): void {
  const fd = fs.openSync(path.join(governed, FILLER), 'a', 0o600);
  try {
    for (const chunk of [64 * 1024, 1024, 1]) {
      const buffer = Buffer.alloc(chunk, 0x61);
      for (;;) {
        try {
          fs.writeSync(fd, buffer);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
    if (leaveBytes > 0) {
      const size = fs.fstatSync(fd).size;
      fs.ftruncateSync(fd, Math.max(0, size - leaveBytes));
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function freeSpace(governed: string): void {
  fs.rmSync(path.join(governed, FILLER), { force: true });
}

function journalsOnDisk(project: string): string[] {
  return journalsIn(project).sort();
}

/** Every journal left behind verifies as a prefix or a complete journal; never 1 (failed). */
function assertEveryJournalVerifies(project: string): Map<string, number> {
  const key = projectPublicKey(project);
  const statuses = new Map<string, number>();
  for (const file of journalsOnDisk(project)) {
    const { status, report } = inspect(file, runIdOf(file), key);
    assert.ok(
      status === 0 || status === 2,
      `${path.basename(file)} (${fs.statSync(file).size} bytes) must verify, got exit ${status}: ${JSON.stringify(report)}`,
    );
    statuses.set(file, status);
  }
  return statuses;
}

function storageFullRefusal(result: unknown): void {
  const r = result as { isError?: boolean };
  assert.equal(r.isError, true, textOf(result));
  const text = textOf(result);
  assert.equal(text.split('\n').length, 1, 'one line');
  assert.match(text, /the audit storage is full \((ENOSPC|EDQUOT)/);
}

for (const kind of ['tmpfs', 'ext2 with 1 KiB blocks'] as const) {
  describe(`invoke_agent with .symbiont/governed on a full ${kind}`, { skip: skipReason }, () => {
    let endpoint: SyntheticEndpoint;
    let project: string;
    let server: RunningServer | undefined;
    let storage: MountedStorage | undefined;
    let scratch: string;

    before(async () => {
      project = makeProject(AGENTS);
      scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-full-disk-'));
      const governed = path.join(project, '.symbiont', 'governed');
      fs.mkdirSync(governed, { recursive: true, mode: 0o700 });
      fs.chmodSync(path.dirname(governed), 0o700);
      storage = kind === 'tmpfs' ? mountTmpfs(governed, 256) : mountExt2(governed, path.join(scratch, 'governed.img'), 256);
      prepareStorage(governed);
      endpoint = await startSyntheticEndpoint({
        beforeAnswer: (req) => {
          if (req.rawBody.includes(FILL_DURING_REQUEST)) fill(governed);
        },
      });
      server = await startServer(project, { env: providerEnv(endpoint.url) });
    });

    after(async () => {
      // Unmount even when a test failed, and only what this suite mounted.
      await server?.close();
      await endpoint?.close();
      storage?.unmount();
      fs.rmSync(scratch, { recursive: true, force: true });
      removeProject(project);
    });

    it('a call with room to spare succeeds and its journal is complete (exit 0)', async () => {
      const result = await server!.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'hello' } });
      assert.equal(result.isError, undefined, textOf(result));
      const { audit } = auditOf(result);
      assert.equal(inspect(audit.path, audit.run_id, audit.public_key).status, 0);
    });

    it('with the disk full, calls are refused saying so, and no journal (not even an empty file) is left', async (t) => {
      const before = journalsOnDisk(project);
      fill(storage!.governed);
      t.after(() => freeSpace(storage!.governed));
      for (let i = 0; i < 3; i += 1) {
        const result = await server!.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `full ${i}` } });
        storageFullRefusal(result);
        assert.equal((result as { structuredContent?: unknown }).structuredContent, undefined, 'no audit reference to a journal that does not exist');
      }
      assert.deepEqual(journalsOnDisk(project), before, 'refused calls leave no file that claims to be a journal');
      assertEveryJournalVerifies(project);
      // The server keeps serving.
      const tools = await server!.client.listTools();
      assert.ok(tools.tools.some((tool) => tool.name === 'invoke_agent'));
    });

    it('nearly full (one block free): the interrupted first write leaves nothing behind, or a journal that verifies', async (t) => {
      t.after(() => freeSpace(storage!.governed));
      for (const leave of [1024, 2048, 4096]) {
        const before = new Set(journalsOnDisk(project));
        fill(storage!.governed, leave);
        const result = await server!.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: `nearly full ${leave}` } });
        const statuses = assertEveryJournalVerifies(project);
        const added = journalsOnDisk(project).filter((f) => !before.has(f));
        if ((result as { isError?: boolean }).isError) {
          assert.match(textOf(result), /the audit storage is full \((ENOSPC|EDQUOT)/);
          for (const file of added) assert.ok(fs.statSync(file).size > 0, 'never an empty journal');
        } else {
          assert.equal(added.length, 1);
          assert.equal(statuses.get(added[0]!), 0);
        }
        freeSpace(storage!.governed);
      }
    });

    it('the disk filling during the provider call: the refusal says so and the journal stays a verified prefix (exit 2)', async () => {
      const before = new Set(journalsOnDisk(project));
      try {
        const result = await server!.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: FILL_DURING_REQUEST } });
        const { audit } = auditOf(result);
        assert.ok(!before.has(audit.path));
        const { status, report } = inspect(audit.path, audit.run_id, audit.public_key);
        if (kind === 'tmpfs' && (result as { isError?: boolean }).isError === undefined) {
          // tmpfs allocates whole 4 KiB pages: the rest of the run can fit in the page its
          // first records already hold, so the run may complete; then it verifies as complete.
          assert.equal(status, 0, JSON.stringify(report));
          return;
        }
        storageFullRefusal(result);
        assert.equal(status, 2, JSON.stringify(report));
        assert.equal(report.unverified_tail_bytes, 0, 'the partial write was cut back to the last durable record');
        assert.equal((report.effects as { outcome: string }[])[0]!.outcome, 'unknown');
        assertEveryJournalVerifies(project);
      } finally {
        freeSpace(storage!.governed);
      }
    });

    it('once space returns, the next call succeeds and verifies (exit 0)', async () => {
      const result = await server!.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'space is back' } });
      assert.equal(result.isError, undefined, textOf(result));
      const { audit } = auditOf(result);
      assert.equal(inspect(audit.path, audit.run_id, audit.public_key).status, 0);
      assertEveryJournalVerifies(project);
      assert.doesNotMatch(server!.stderr(), /hello|space is back/, 'prompts never reach standard error');
    });
  });
}

describe('a project whose signing key does not exist yet, started on a full ext2 with 1 KiB blocks', { skip: skipReason }, () => {
  it('refuses saying so, leaves no empty key and no journal, and works once space returns', async () => {
    const project = makeProject(AGENTS);
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'symbi-full-disk-'));
    const governed = path.join(project, '.symbiont', 'governed');
    let storage: MountedStorage | undefined;
    let server: RunningServer | undefined;
    let endpoint: SyntheticEndpoint | undefined;
    try {
      fs.mkdirSync(governed, { recursive: true, mode: 0o700 });
      fs.chmodSync(path.dirname(governed), 0o700);
      storage = mountExt2(governed, path.join(scratch, 'governed.img'), 128);
      fs.chmodSync(governed, 0o700);
      fill(governed);
      endpoint = await startSyntheticEndpoint();
      server = await startServer(project, { env: providerEnv(endpoint.url) });
      const result = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'no key yet' } });
      storageFullRefusal(result);
      assert.equal(fs.existsSync(path.join(governed, 'audit-signing.key')), false, 'no empty or partial key file is left to be refused later');
      assert.deepEqual(journalsOnDisk(project), []);
      await server.close();
      server = undefined;

      // Space returns: the key is created and the call succeeds (in a fresh process, whatever
      // the server's rule for a key that could not be created at startup).
      freeSpace(governed);
      server = await startServer(project, { env: providerEnv(endpoint.url) });
      const next = await server.client.callTool({ name: 'invoke_agent', arguments: { agent: 'assistant', prompt: 'space is back' } });
      assert.equal(next.isError, undefined, textOf(next));
      const { audit } = auditOf(next);
      assert.equal(audit.public_key, projectPublicKey(project));
      assert.equal(inspect(audit.path, audit.run_id, audit.public_key).status, 0);
    } finally {
      await server?.close();
      await endpoint?.close();
      storage?.unmount();
      fs.rmSync(scratch, { recursive: true, force: true });
      removeProject(project);
    }
  });
});

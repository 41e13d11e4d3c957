import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pinProject } from '../../src/shared/confinement/index.js';
import crypto from 'node:crypto';
import { openAuditStorage, closeAuditStorage, UnsafeStorageError, type AuditStorage } from '../../src/shared/storage/audit-storage.js';
import { responsePrincipal } from '../../src/shared/agent-identity.js';
import { JournalExistsError, JournalWriter, reserveJournalFile } from '../../src/shared/journal/journal-writer.js';
import { inspectJournal } from '../../src/shared/journal/journal-verifier.js';

// Unsafe audit storage is refused with a message naming the path and the
// problem, and nothing (no journal) is written into it.

const AGENT_ID = responsePrincipal('assistant');
const STARTED_EVENT = { Started: { execution_context: { agent_definition: { name: 'assistant' } } } };

function freshProject(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-storage-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Creates healthy storage (dirs 0700, key 0600) so a case can then break one thing. */
function prepared(t: { after(fn: () => void): void }): { dir: string; governed: string; key: string } {
  const dir = freshProject(t);
  closeAuditStorage(openAuditStorage(pinProject(dir)));
  const governed = path.join(dir, '.symbiont', 'governed');
  return { dir, governed, key: path.join(governed, 'audit-signing.key') };
}

function refusal(dir: string): string {
  try {
    closeAuditStorage(openAuditStorage(pinProject(dir)));
  } catch (err) {
    assert.ok(err instanceof UnsafeStorageError, `expected UnsafeStorageError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), 'the refusal is one line');
    return err.message;
  }
  assert.fail('the storage was accepted');
}

function journalsIn(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && !e.isSymbolicLink()) walk(p);
      else if (e.name.endsWith('.jsonl')) found.push(p);
    }
  };
  walk(dir);
  return found;
}

test('fresh storage is created private: directories 0700, a 32-byte key 0600', (t) => {
  const dir = freshProject(t);
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  assert.equal(fs.statSync(path.join(dir, '.symbiont')).mode & 0o777, 0o700);
  assert.equal(fs.statSync(path.join(dir, '.symbiont', 'governed')).mode & 0o777, 0o700);
  const key = path.join(dir, '.symbiont', 'governed', 'audit-signing.key');
  assert.equal(fs.statSync(key).size, 32);
  assert.equal(fs.statSync(key).mode & 0o777, 0o600);
  assert.equal(storage.governedPath, path.join(fs.realpathSync(dir), '.symbiont', 'governed'));
  // Reopening loads the same key rather than replacing it.
  const again = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(again));
  assert.equal(again.signingKey.publicKeyHex, storage.signingKey.publicKeyHex);
});

test('each unsafe storage is refused with its own message and no journal results', async (t) => {
  const messages = new Map<string, string>();
  const check = (name: string, dir: string, pattern: RegExp) => {
    const message = refusal(dir);
    assert.match(message, pattern, `${name}: ${message}`);
    assert.deepEqual(journalsIn(dir), [], `${name}: no journal was created`);
    messages.set(name, message);
  };

  {
    const { dir, governed } = prepared(t);
    fs.chmodSync(governed, 0o750);
    check('group-accessible governed', dir, /governed: unsafe storage: mode 0750 grants group or other access/);
  }
  {
    const { dir, governed } = prepared(t);
    fs.chmodSync(governed, 0o707);
    check('world-accessible governed', dir, /governed: unsafe storage: mode 0707 grants group or other access/);
  }
  {
    const dir = freshProject(t);
    const elsewhere = freshProject(t);
    fs.mkdirSync(path.join(elsewhere, 'governed'), { mode: 0o700 });
    fs.chmodSync(elsewhere, 0o700);
    fs.symlinkSync(elsewhere, path.join(dir, '.symbiont'));
    check('symlinked .symbiont', dir, /\.symbiont: unsafe storage: is a symlink/);
  }
  {
    const dir = freshProject(t);
    const elsewhere = freshProject(t);
    fs.chmodSync(elsewhere, 0o700);
    fs.mkdirSync(path.join(dir, '.symbiont'), { mode: 0o700 });
    fs.symlinkSync(elsewhere, path.join(dir, '.symbiont', 'governed'));
    check('symlinked governed', dir, /governed: unsafe storage: is a symlink/);
  }
  {
    const { dir, key } = prepared(t);
    const outside = path.join(dir, 'real.key');
    fs.renameSync(key, outside);
    fs.symlinkSync(outside, key);
    check('symlinked key', dir, /audit-signing\.key: unsafe signing key: is a symlink/);
  }
  {
    const { dir, key } = prepared(t);
    fs.linkSync(key, path.join(dir, 'second-name.key'));
    check('hardlinked key', dir, /audit-signing\.key: unsafe signing key: has 2 hard links/);
  }
  {
    const { dir, key } = prepared(t);
    fs.writeFileSync(key, Buffer.alloc(31, 7));
    check('31-byte key', dir, /audit-signing\.key: invalid signing key: is 31 bytes; expected exactly 32/);
    assert.equal(fs.statSync(key).size, 31, 'a bad key is never silently replaced');
  }
  {
    const { dir, key } = prepared(t);
    fs.chmodSync(key, 0o644);
    check('key mode 0644', dir, /audit-signing\.key: unsafe signing key: mode 0644 grants group or other access; expected 0600/);
  }
  {
    const { dir, key } = prepared(t);
    fs.rmSync(key);
    fs.mkdirSync(key);
    check('key is a directory', dir, /audit-signing\.key: unsafe signing key: not a regular file/);
  }
  {
    const dir = freshProject(t);
    fs.writeFileSync(path.join(dir, '.symbiont'), 'not a directory');
    check('.symbiont is a file', dir, /\.symbiont: unsafe storage: not a directory/);
  }
  if (process.getuid?.() === 0) {
    const { dir, governed } = prepared(t);
    fs.chownSync(governed, 65534, 65534);
    check('governed owned by another user', dir, /governed: unsafe storage: owned by uid 65534/);
  }

  const distinct = new Set([...messages.values()].map((m) => m.replace(/^\/[^.]*\/(?=\.symbiont)/, '')));
  assert.equal(distinct.size, messages.size, 'every case has its own message');
});

// Journal files made ahead of their run (src/worker/journal-reserve.ts): an unnamed
// file that a run names. Run per route and without /proc by confinement-routes.test.ts.

/** Whether this route and system can name a reserved file: an O_TMPFILE route, and /proc to link it by. */
function canNameReservedFiles(storage: AuditStorage): boolean {
  return storage.route.nameUnnamedFile !== undefined && fs.existsSync('/proc/self/fd');
}

function isOpen(fd: number): boolean {
  try {
    fs.fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

test('a reserved journal file becomes the run journal: exclusive name, mode 0600, one link, a chain that verifies', async (t) => {
  const { dir, governed } = prepared(t);
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const before = fs.readdirSync(governed).sort();
  const reserved = reserveJournalFile(storage);
  assert.equal(reserved !== undefined, storage.route.openUnnamedFile !== undefined, 'a route with unnamed files reserves one');
  assert.deepEqual(fs.readdirSync(governed).sort(), before, 'a reserved file has no name in the directory');
  const runId = crypto.randomUUID();
  const writer = await JournalWriter.create(storage, runId, AGENT_ID, { reservedFd: reserved });
  assert.equal(writer.usedReservedFile, reserved !== undefined && canNameReservedFiles(storage));
  await writer.appendAll([STARTED_EVENT]);
  await writer.appendTerminal('Completed');
  await writer.close();
  const stat = fs.lstatSync(writer.path);
  assert.ok(stat.isFile());
  assert.equal(stat.nlink, 1);
  assert.equal(stat.mode & 0o777, 0o600);
  assert.equal(inspectJournal(writer.path, runId, storage.signingKey.publicKeyHex).exitCode, 0);
  assert.deepEqual(fs.readdirSync(governed).sort(), [...before, `${AGENT_ID}.${runId}.jsonl`].sort());
});

test('a reserved journal file never takes a name that exists: a planted symlink or file stays as it was', async (t) => {
  const { dir, governed } = prepared(t);
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const outside = path.join(freshProject(t), 'target.txt');
  fs.writeFileSync(outside, 'outside\n');
  const symlinked = crypto.randomUUID();
  fs.symlinkSync(outside, path.join(governed, `${AGENT_ID}.${symlinked}.jsonl`));
  const planted = crypto.randomUUID();
  fs.writeFileSync(path.join(governed, `${AGENT_ID}.${planted}.jsonl`), 'planted\n', { mode: 0o600 });
  for (const runId of [symlinked, planted]) {
    const reserved = reserveJournalFile(storage);
    await assert.rejects(JournalWriter.create(storage, runId, AGENT_ID, { reservedFd: reserved }), JournalExistsError);
    if (reserved !== undefined) assert.equal(isOpen(reserved), false, 'the reserved file is closed, leaving no name behind');
  }
  assert.equal(fs.readFileSync(outside, 'utf8'), 'outside\n');
  assert.ok(fs.lstatSync(path.join(governed, `${AGENT_ID}.${symlinked}.jsonl`)).isSymbolicLink());
  assert.equal(fs.readFileSync(path.join(governed, `${AGENT_ID}.${planted}.jsonl`), 'utf8'), 'planted\n');
  assert.equal(fs.statSync(outside).nlink, 1);
});

test('a reserved journal file that is never used leaves nothing in the directory', (t) => {
  const { dir, governed } = prepared(t);
  const storage = openAuditStorage(pinProject(dir));
  t.after(() => closeAuditStorage(storage));
  const before = fs.readdirSync(governed).sort();
  const reserved = reserveJournalFile(storage);
  if (reserved !== undefined) fs.closeSync(reserved);
  assert.deepEqual(fs.readdirSync(governed).sort(), before);
});

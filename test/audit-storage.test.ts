import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PinnedDirectory } from '../src/shared/pinned-directory.js';
import { openAuditStorage, closeAuditStorage, UnsafeStorageError } from '../src/shared/audit-storage.js';

// Unsafe audit storage is refused with a message naming the path and the
// problem, and nothing (no journal) is written into it.

function freshProject(t: { after(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-storage-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Creates healthy storage (dirs 0700, key 0600) so a case can then break one thing. */
function prepared(t: { after(fn: () => void): void }): { dir: string; governed: string; key: string } {
  const dir = freshProject(t);
  closeAuditStorage(openAuditStorage(PinnedDirectory.pin(dir)));
  const governed = path.join(dir, '.symbiont', 'governed');
  return { dir, governed, key: path.join(governed, 'audit-signing.key') };
}

function refusal(dir: string): string {
  try {
    closeAuditStorage(openAuditStorage(PinnedDirectory.pin(dir)));
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
  const storage = openAuditStorage(PinnedDirectory.pin(dir));
  t.after(() => closeAuditStorage(storage));
  assert.equal(fs.statSync(path.join(dir, '.symbiont')).mode & 0o777, 0o700);
  assert.equal(fs.statSync(path.join(dir, '.symbiont', 'governed')).mode & 0o777, 0o700);
  const key = path.join(dir, '.symbiont', 'governed', 'audit-signing.key');
  assert.equal(fs.statSync(key).size, 32);
  assert.equal(fs.statSync(key).mode & 0o777, 0o600);
  assert.equal(storage.governedPath, path.join(fs.realpathSync(dir), '.symbiont', 'governed'));
  // Reopening loads the same key rather than replacing it.
  const again = openAuditStorage(PinnedDirectory.pin(dir));
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

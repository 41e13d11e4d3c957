import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { symbiBin } from './server-entry.js';

// A project with everything the writer check judges below the root (agents/,
// an agent file, AGENTS.md, policies/, a policy file), sound as made (0755
// folders, 0644 files), and `symbi check`'s report on it: the macOS and
// FreeBSD ACL tests (test/process/macos-acls.test.ts, freebsd-acls.test.ts)
// change one level and read what the report says of it.

const run = promisify(execFile);
const PERMIT = 'permit(principal, action == Action::"respond", resource);\n';

/** Each level the tests change. */
export const TRUSTED_LEVELS = ['.', 'agents', 'agents/assistant.symbi', 'AGENTS.md', 'policies', 'policies/respond.cedar'] as const;
export type TrustedLevel = (typeof TRUSTED_LEVELS)[number];

/** What `symbi check` says of a project where nothing is refused. */
export const SOUND_REPORT = [/ok +assistant \(agents\/assistant\.symbi\): invocable/, /ok +policies\/respond\.cedar: loaded 1 policy/, /ok +ownership: /];

/** A sound project in `base` (its real path, as the report names it), then `change` run with sh in it. */
export function makeTrustedProject(base: string, change = ''): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(base, 'project-')));
  fs.chmodSync(dir, 0o755);
  for (const folder of ['agents', 'policies']) fs.mkdirSync(path.join(dir, folder));
  fs.writeFileSync(path.join(dir, 'agents', 'assistant.symbi'), 'agent assistant {}\n');
  fs.writeFileSync(path.join(dir, 'policies', 'respond.cedar'), PERMIT);
  fs.writeFileSync(path.join(dir, 'AGENTS.md'), '# Project\n');
  for (const folder of ['agents', 'policies']) fs.chmodSync(path.join(dir, folder), 0o755);
  for (const file of ['agents/assistant.symbi', 'policies/respond.cedar', 'AGENTS.md']) fs.chmodSync(path.join(dir, file), 0o644);
  if (change !== '') execFileSync('sh', ['-c', change], { cwd: dir });
  return dir;
}

/** `symbi check`'s report on `dir` (without a provider it always fails; its report is what is judged). */
export async function checkReport(dir: string, home: string): Promise<string> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) };
  try {
    return (await run(process.execPath, [symbiBin, 'check', '--project', dir], { env, encoding: 'utf8' })).stdout;
  } catch (err) {
    return (err as { stdout: string }).stdout;
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** How the report names `level` of `dir` refused for `why` (a pattern), with `fix` (plain text) named. */
export function refusedLevel(level: TrustedLevel, dir: string, why: string, fix: string): RegExp {
  const at = escape(level === '.' ? dir : `${dir}/${level}`);
  const fixed = escape(fix);
  switch (level) {
    case '.':
      return new RegExp(`FAIL +ownership: .*${at} ${why}.*\\(fix: ${fixed}`);
    case 'agents':
      return new RegExp(`warn +agents/ can be changed by another user, so no agents were loaded: ${at} ${why}.*\\(fix: ${fixed}`);
    case 'agents/assistant.symbi':
      return new RegExp(`warn +left out agents/assistant\\.symbi: ${at} ${why}.*\\(fix: ${fixed}`);
    case 'AGENTS.md':
      return new RegExp(`warn +left out: AGENTS\\.md: ${at} ${why}.*\\(fix: ${fixed}`);
    case 'policies':
      return new RegExp(`FAIL +the policy set denies every response: policies/: .*${why}.*${fixed}`);
    case 'policies/respond.cedar':
      return new RegExp(`FAIL +the policy set denies every response: policies/respond\\.cedar: .*${why}.*${fixed}`);
  }
}

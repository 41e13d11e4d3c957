// Builds the startup policy snapshot from the project's policy files (already read and
// ordered by the caller): default permission when there are none, the configured Cedar
// policies when every file is sound and every policy validates against the respond
// schema, and deny-all when any file or policy is not.
import { foldToOneLine } from '../text/one-line-text.js';
import { parsePolicyFile, type ParsedPolicy } from './policy-file-parse.js';
import { policyLabel, policyStartLine } from './policy-label.js';
import { validateRespondPolicies, type PolicyDiagnostic } from './respond-validation.js';

/** A project-relative path, with its text or the reason it could not be read. */
export interface PolicyFileInput {
  path: string;
  text?: string;
  error?: string;
  /** Read, but not to be trusted (e.g. writable by other users): why. */
  refused?: string;
}

export interface LoadedPolicy {
  id: string;
  file: string;
  text: string;
  /** Line of the policy's first character (its annotations included) in its file; in a JSON entry, in the entry's source. */
  line: number;
  /** How stderr names it: its @id, else file:line (policy-label.ts). */
  label: string;
}

/**
 * What loading said of one policy file, or that no file means default permission: typed, so a
 * reader asks its kind; policyNoticeText words it for standard error and `symbi check`.
 */
export type PolicyNotice =
  | { kind: 'default_permit' }
  | { kind: 'loaded'; file: string; policies: number; inactiveEntries: number }
  | { kind: 'rejected'; file: string; problem: string };

export interface LoadedPolicySet {
  mode: 'default-permit' | 'configured' | 'deny-all';
  /** Active Cedar policies, in file then source order; ids look like "policies/a.cedar#0". */
  policies: LoadedPolicy[];
  /** One per file (loaded or rejected), or the default permission. */
  notices: PolicyNotice[];
  /** Schema validation findings that change no decision, e.g. a policy that can never hold. */
  warnings: string[];
  /** Present in deny-all mode: one line naming the file(s) and the problem (callers add their own lead-in). */
  denyReason?: string;
  /** Every problem above, each with its file and, where known, line and column (`symbi policy validate`). */
  diagnostics: PolicyDiagnostic[];
}

/** The one line a notice is shown as; `file` is already shown as stderr shows paths (shownPath). */
export function policyNoticeText(notice: PolicyNotice): string {
  switch (notice.kind) {
    case 'default_permit':
      return 'no policy files: every response is permitted (default permission)';
    case 'loaded': {
      const skipped = notice.inactiveEntries > 0 ? `, skipped ${notice.inactiveEntries} inactive ${plural(notice.inactiveEntries, 'entry', 'entries')}` : '';
      return `${notice.file}: loaded ${notice.policies} ${plural(notice.policies, 'policy', 'policies')}${skipped}`;
    }
    case 'rejected':
      return `${notice.file}: rejected: ${notice.problem}`;
  }
}

export function loadPolicySet(files: readonly PolicyFileInput[]): LoadedPolicySet {
  if (files.length === 0) {
    return freeze({ mode: 'default-permit', policies: [], notices: [{ kind: 'default_permit' }], warnings: [], diagnostics: [] });
  }
  const notices: PolicyNotice[] = [];
  const problems: string[] = [];
  const diagnostics: PolicyDiagnostic[] = [];
  const fileError = (path: string, message: string, position?: { line: number; column: number }): void => {
    notices.push({ kind: 'rejected', file: path, problem: message });
    problems.push(`${path}: ${message}`);
    diagnostics.push({ severity: 'error', file: path, line: position?.line ?? null, column: position?.column ?? null, message: foldToOneLine(message) });
  };
  const parsed: ParsedPolicy[] = [];
  const ids = new Set<string>();
  /** Where each loaded file's notice is, so a file whose policy breaks the set is marked rejected. */
  const loadedNotice = new Map<string, { index: number; path: string }>();
  for (const file of files) {
    const path = shownPath(file.path);
    const problem = fileProblem(file);
    if (problem !== undefined) {
      fileError(path, problem);
      continue;
    }
    const result = parsePolicyFile(String(file.path), file.text as string);
    if (!result.ok) {
      fileError(path, result.error, result.position);
      continue;
    }
    const clash = firstRepeatedId(result.policies, ids);
    if (clash !== undefined) {
      fileError(path, `two policies would share the id ${JSON.stringify(clash)}; rename the JSON entries`);
      continue;
    }
    for (const policy of result.policies) ids.add(policy.id);
    parsed.push(...result.policies);
    loadedNotice.set(String(file.path), { index: notices.length, path });
    notices.push({ kind: 'loaded', file: path, policies: result.policies.length, inactiveEntries: result.inactiveEntries });
  }

  let denyReason: string | undefined;
  if (problems.length > 0) {
    denyReason = problems.map((text) => foldToOneLine(text)).join('; ');
  } else if (parsed.length === 0) {
    const names = files.map((file) => shownPath(file.path)).join(', ');
    denyReason = `the configured policy set (${names}) holds no active policy`;
    diagnostics.push({
      severity: 'error',
      file: names,
      line: null,
      column: null,
      message: 'no active policy: a configured policy set without one denies every response',
    });
  }
  if (denyReason !== undefined) {
    return freeze({ mode: 'deny-all', policies: [], notices, warnings: [], denyReason, diagnostics });
  }

  // A policy that fails validation would fail when evaluated, and Cedar skips such a
  // policy: the set is malformed (see respond-validation.ts).
  const findings = validateRespondPolicies(parsed);
  if (findings.errors.length > 0) {
    // The file holding a policy that fails is the file that breaks the set: its notice says so.
    for (const [file, { index, path }] of loadedNotice) {
      const count = findings.diagnostics.filter((d) => d.severity === 'error' && d.file === file).length;
      if (count > 0)
        notices[index] = {
          kind: 'rejected',
          file: path,
          problem: `${count} ${plural(count, 'policy fails', 'policies fail')} validation against the respond schema`,
        };
    }
    return freeze({
      mode: 'deny-all',
      policies: [],
      notices,
      warnings: findings.warnings,
      denyReason: `a policy fails validation against the respond schema: ${findings.errors.join('; ')}`,
      diagnostics: [...diagnostics, ...findings.diagnostics],
    });
  }
  return freeze({
    mode: 'configured',
    policies: parsed.map((policy) => {
      const line = policyStartLine(policy);
      return { id: policy.id, file: policy.file, text: policy.text, line, label: policyLabel(policy, line) };
    }),
    notices,
    warnings: findings.warnings,
    diagnostics: findings.diagnostics,
  });
}

/** The path as shown on stderr: quoted when it holds control characters, so it stays on one line. */
function shownPath(path: unknown): string {
  const text = String(path);
  // oxlint-disable-next-line no-control-regex -- matching control characters is the point
  return /[\u0000-\u001f\u007f]/.test(text) ? JSON.stringify(text) : text;
}

function fileProblem(file: PolicyFileInput): string | undefined {
  if (typeof file.refused === 'string') return foldToOneLine(file.refused);
  if (typeof file.error === 'string') {
    // Readers often start their message with the path; the line already does.
    const path = String(file.path);
    const error = file.error.startsWith(path) ? file.error.slice(path.length).replace(/^[:\s]+/, '') : file.error;
    return `could not be read: ${foldToOneLine(error) || 'no reason given'}`;
  }
  if (file.error !== undefined) return 'could not be read';
  if (typeof file.text !== 'string') return 'could not be read: no text was provided';
  return undefined;
}

/** An id this file repeats, or shares with an earlier file (JSON names like "x" and "x.0" can). */
function firstRepeatedId(policies: readonly ParsedPolicy[], earlier: ReadonlySet<string>): string | undefined {
  const seen = new Set<string>();
  for (const { id } of policies) {
    if (earlier.has(id) || seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}

function plural(count: number, one: string, many: string): string {
  return count === 1 ? one : many;
}

function freeze(set: LoadedPolicySet): LoadedPolicySet {
  for (const policy of set.policies) Object.freeze(policy);
  Object.freeze(set.policies);
  for (const notice of set.notices) Object.freeze(notice);
  Object.freeze(set.notices);
  Object.freeze(set.warnings);
  for (const diagnostic of set.diagnostics) Object.freeze(diagnostic);
  Object.freeze(set.diagnostics);
  return Object.freeze(set);
}

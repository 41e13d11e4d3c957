import fs from 'node:fs';
import path from 'node:path';
import { ConfinementError, type PinnedDirectory } from '../../shared/confinement/index.js';
import { FINISH_REASONS, type FinishReason } from '../../shared/provider/finish-reasons.js';
import { POLICY_FILE_MAX_BYTES, TYPED_RESPONSE_MAX_BYTES } from '../../shared/limits.js';
import type { PolicyFileInput } from '../../shared/policy/policy-set.js';
import { isRecord } from '../../shared/json-value.js';

// The case files of `symbi policy test` (docs/cedar-policies.md, "Testing
// policies"): read and checked here, so that a malformed file is refused with
// one line naming the file, the case and the field before any case runs.
//
// Every path inside a case file (`policies`, `response_file`) names a file of
// the project, read through the pinned project directory with the project's
// path rules (PinnedDirectory.readTextFile): relative to the project folder, no
// leading "/", no "..", no hidden or reserved component, no symlink followed.
// A case file may come from anywhere (a CI step runs the ones a pull request
// brings), and what a case reads is judged by Cedar, whose determining policies
// are printed: a path that could leave the project would let such a file read
// the process's environment or the audit signing key out, a decision at a time.

export interface PolicyCase {
  /** Shown in the output; "case N" when the file gives none. */
  name: string;
  agent: string;
  /** The exact response text Cedar judges; never printed. */
  response: string;
  finishReason: FinishReason;
  providerFinishReason: string;
  expect: 'allow' | 'deny';
  /** Policies (by @id or policy id) expected to determine the decision, when the case names them. */
  determining?: string[];
}

export interface CaseFile {
  /** As given on the command line, or project-relative for the default cases. */
  shown: string;
  /** Policy files of the project to test instead of its set, read as the loader expects them. */
  policies?: PolicyFileInput[];
  cases: PolicyCase[];
}

export class CaseFileError extends Error {}

const FILE_KEYS = new Set(['policies', 'cases']);
const CASE_KEYS = new Set(['name', 'agent', 'response', 'response_file', 'finish_reason', 'provider_finish_reason', 'expect', 'determining']);
const CASE_FILE_MAX_BYTES = 4 * 1024 * 1024;

function fail(message: string): never {
  throw new CaseFileError(message);
}

/** What a path in a case file may be. */
const PROJECT_PATHS = 'a path relative to the project folder, such as "policies/tests/answers/long.txt" (no leading "/", no "..", no hidden names)';

/**
 * The text of the project file `relPath` names, through the pinned directory; a path the project's
 * rules refuse ends the parse with `refused` (one line saying what is allowed), any other failure
 * (no such file, a symlink, too large, not UTF-8) with `unreadable`.
 */
function projectText(
  project: PinnedDirectory,
  relPath: string,
  maxBytes: number,
  refused: (line: string) => never,
  unreadable: (reason: string) => string,
): string {
  try {
    // policies/ holds the case files and the policies they test; the other rules apply as to every project path.
    return project.readTextFile(relPath, maxBytes, { allowPolicies: true }).text;
  } catch (error) {
    if (!(error instanceof ConfinementError)) throw error;
    if (error.code === 'invalid_path') {
      const why = /^path refused: (.*?); expected /.exec(error.message)?.[1] ?? error.message;
      return refused(`names ${JSON.stringify(relPath)}, which is refused (${why}); allowed: ${PROJECT_PATHS}`);
    }
    throw new ProjectFileUnreadable(unreadable(error.message));
  }
}

class ProjectFileUnreadable extends Error {}

/** Parses one case file's text; its paths name files of `project`. */
export function parseCaseFile(shown: string, text: string, project: PinnedDirectory): CaseFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail(`${shown}: not valid JSON (${(error as Error).message}); a case file is {"cases": [...]}`);
  }
  if (!isRecord(parsed)) fail(`${shown}: expected a JSON object {"cases": [...]}, optionally with "policies"`);
  const top = parsed;
  const extra = Object.keys(top).find((key) => !FILE_KEYS.has(key));
  if (extra !== undefined) fail(`${shown}: unknown key ${JSON.stringify(extra)}; allowed: cases, policies`);
  const file: CaseFile = { shown, cases: [] };
  if (top.policies !== undefined) {
    if (!Array.isArray(top.policies) || top.policies.length === 0 || !top.policies.every((p) => typeof p === 'string' && p !== '')) {
      fail(`${shown}: "policies" must be a non-empty array of policy file paths, relative to the project folder`);
    }
    // A file that cannot be read is the loader's to report (the set then denies every response), as for the project's own.
    file.policies = (top.policies as string[]).map((p): PolicyFileInput => {
      try {
        return {
          path: p,
          text: projectText(
            project,
            p,
            POLICY_FILE_MAX_BYTES,
            (line) => fail(`${shown}: field "policies" ${line}`),
            (reason) => reason,
          ),
        };
      } catch (error) {
        if (error instanceof ProjectFileUnreadable) return { path: p, error: error.message };
        throw error;
      }
    });
  }
  if (!Array.isArray(top.cases) || top.cases.length === 0) fail(`${shown}: "cases" must be a non-empty array of cases`);
  top.cases.forEach((raw: unknown, index) => file.cases.push(parseCase(shown, raw, index, project)));
  return file;
}

function parseCase(shown: string, raw: unknown, index: number, project: PinnedDirectory): PolicyCase {
  let where = `${shown}: case ${index + 1}`;
  const bad: (field: string, allowed: string) => never = (field, allowed) => fail(`${where}: field "${field}" ${allowed}`);
  if (!isRecord(raw)) fail(`${where}: not an object; a case is {"agent", "response" or "response_file", "expect", ...}`);
  const c = raw;
  if (c.name !== undefined) {
    if (typeof c.name !== 'string' || c.name.trim() === '') bad('name', 'must be a non-empty string');
    where += ` (${JSON.stringify(c.name)})`;
  }
  const extra = Object.keys(c).find((key) => !CASE_KEYS.has(key));
  if (extra !== undefined) fail(`${where}: unknown field ${JSON.stringify(extra)}; allowed: ${[...CASE_KEYS].join(', ')}`);
  if (typeof c.agent !== 'string' || c.agent === '') bad('agent', 'must be the filename stem of an agent, such as "assistant" for agents/assistant.symbi');
  if ((c.response === undefined) === (c.response_file === undefined)) {
    fail(`${where}: give exactly one of "response" (the answer text) and "response_file" (a file holding it, relative to the project folder)`);
  }
  let response: string;
  if (c.response !== undefined) {
    if (typeof c.response !== 'string') bad('response', 'must be a string: the exact answer text Cedar judges');
    response = c.response;
  } else {
    if (typeof c.response_file !== 'string' || c.response_file === '') bad('response_file', `must be a path to a text file: ${PROJECT_PATHS}`);
    const named = c.response_file;
    try {
      response = projectText(
        project,
        named,
        TYPED_RESPONSE_MAX_BYTES,
        (line) => bad('response_file', line),
        (reason) => `names ${named}, which cannot be read: ${reason}`,
      );
    } catch (error) {
      if (error instanceof ProjectFileUnreadable) return fail(`${where}: field "response_file" ${error.message}`);
      throw error;
    }
  }
  if (!response.isWellFormed()) bad(c.response !== undefined ? 'response' : 'response_file', 'is not well-formed Unicode');
  let finishReason: FinishReason = 'complete';
  if (c.finish_reason !== undefined) {
    const known = FINISH_REASONS.find((f) => f === c.finish_reason);
    if (known === undefined) bad('finish_reason', `must be one of ${FINISH_REASONS.join(', ')}`);
    finishReason = known;
  }
  let providerFinishReason = '';
  if (c.provider_finish_reason !== undefined) {
    if (typeof c.provider_finish_reason !== 'string')
      bad('provider_finish_reason', 'must be a string, such as "stop" or "end_turn" ("" when the provider gave none)');
    providerFinishReason = c.provider_finish_reason;
  }
  if (c.expect !== 'allow' && c.expect !== 'deny') bad('expect', 'must be "allow" or "deny"');
  const parsed: PolicyCase = {
    name: typeof c.name === 'string' ? c.name : `case ${index + 1}`,
    agent: c.agent,
    response,
    finishReason,
    providerFinishReason,
    expect: c.expect,
  };
  if (c.determining !== undefined) {
    if (!Array.isArray(c.determining) || !c.determining.every((d) => typeof d === 'string' && d !== '')) {
      bad('determining', 'must be an array of policy @id annotations or policy ids (an empty array: no policy determines the decision)');
    }
    parsed.determining = c.determining as string[];
  }
  return parsed;
}

/** Reads one case file from a path given on the command line; the paths inside it name files of `project`. */
export function readCaseFile(shownPath: string, project: PinnedDirectory): CaseFile {
  const absolute = path.resolve(shownPath);
  let text: string;
  try {
    const stat = fs.statSync(absolute);
    if (!stat.isFile()) fail(`${shownPath}: not a regular file; give case files (*.json)`);
    if (stat.size > CASE_FILE_MAX_BYTES) fail(`${shownPath}: ${stat.size} bytes; a case file is at most ${CASE_FILE_MAX_BYTES} bytes`);
    text = fs.readFileSync(absolute, 'utf8');
  } catch (error) {
    if (error instanceof CaseFileError) throw error;
    fail(`${shownPath}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseCaseFile(shownPath, text, project);
}

import fs from 'node:fs';
import path from 'node:path';
import { FINISH_REASONS, type FinishReason } from '../../shared/provider/finish-reasons.js';
import { TYPED_RESPONSE_MAX_BYTES } from '../../shared/limits.js';

// The case files of `symbi policy test` (docs/cedar-policies.md, "Testing
// policies"): read and checked here, so that a malformed file is refused with
// one line naming the file, the case and the field before any case runs.

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
  /** Policy files to test instead of the project's set, resolved against the case file's folder. */
  policies?: { shown: string; absolute: string }[];
  cases: PolicyCase[];
}

export class CaseFileError extends Error {}

const FILE_KEYS = new Set(['policies', 'cases']);
const CASE_KEYS = new Set(['name', 'agent', 'response', 'response_file', 'finish_reason', 'provider_finish_reason', 'expect', 'determining']);
const CASE_FILE_MAX_BYTES = 4 * 1024 * 1024;

function fail(message: string): never {
  throw new CaseFileError(message);
}

/** Parses one case file's text; `dir` resolves response_file and policies paths. */
export function parseCaseFile(shown: string, text: string, dir: string): CaseFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail(`${shown}: not valid JSON (${(error as Error).message}); a case file is {"cases": [...]}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail(`${shown}: expected a JSON object {"cases": [...]}, optionally with "policies"`);
  const top = parsed as Record<string, unknown>;
  const extra = Object.keys(top).find((key) => !FILE_KEYS.has(key));
  if (extra !== undefined) fail(`${shown}: unknown key ${JSON.stringify(extra)}; allowed: cases, policies`);
  const file: CaseFile = { shown, cases: [] };
  if (top.policies !== undefined) {
    if (!Array.isArray(top.policies) || top.policies.length === 0 || !top.policies.every((p) => typeof p === 'string' && p !== '')) {
      fail(`${shown}: "policies" must be a non-empty array of policy file paths, relative to the case file`);
    }
    // Shown as paths from the current folder, as a user would type them.
    file.policies = (top.policies as string[]).map((p) => {
      const absolute = path.resolve(dir, p);
      return { shown: path.relative(process.cwd(), absolute) || absolute, absolute };
    });
  }
  if (!Array.isArray(top.cases) || top.cases.length === 0) fail(`${shown}: "cases" must be a non-empty array of cases`);
  top.cases.forEach((raw: unknown, index) => file.cases.push(parseCase(shown, raw, index, dir)));
  return file;
}

function parseCase(shown: string, raw: unknown, index: number, dir: string): PolicyCase {
  let where = `${shown}: case ${index + 1}`;
  const bad: (field: string, allowed: string) => never = (field, allowed) => fail(`${where}: field "${field}" ${allowed}`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail(`${where}: not an object; a case is {"agent", "response" or "response_file", "expect", ...}`);
  const c = raw as Record<string, unknown>;
  if (c.name !== undefined) {
    if (typeof c.name !== 'string' || c.name.trim() === '') bad('name', 'must be a non-empty string');
    where += ` (${JSON.stringify(c.name)})`;
  }
  const extra = Object.keys(c).find((key) => !CASE_KEYS.has(key));
  if (extra !== undefined) fail(`${where}: unknown field ${JSON.stringify(extra)}; allowed: ${[...CASE_KEYS].join(', ')}`);
  if (typeof c.agent !== 'string' || c.agent === '') bad('agent', 'must be the filename stem of an agent, such as "assistant" for agents/assistant.symbi');
  if ((c.response === undefined) === (c.response_file === undefined)) {
    fail(`${where}: give exactly one of "response" (the answer text) and "response_file" (a file holding it, relative to the case file)`);
  }
  let response: string;
  if (c.response !== undefined) {
    if (typeof c.response !== 'string') bad('response', 'must be a string: the exact answer text Cedar judges');
    response = c.response;
  } else {
    if (typeof c.response_file !== 'string' || c.response_file === '') bad('response_file', 'must be a path to a text file, relative to the case file');
    const target = path.resolve(dir, c.response_file);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(target);
    } catch (error) {
      return bad('response_file', `names ${c.response_file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (bytes.length > TYPED_RESPONSE_MAX_BYTES) bad('response_file', `names a file of ${bytes.length} bytes; a response is at most ${TYPED_RESPONSE_MAX_BYTES} bytes`);
    try {
      response = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return bad('response_file', `names ${c.response_file}, which is not UTF-8 text`);
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
    if (typeof c.provider_finish_reason !== 'string') bad('provider_finish_reason', 'must be a string, such as "stop" or "end_turn" ("" when the provider gave none)');
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

/** Reads one case file from a path given on the command line. */
export function readCaseFile(shownPath: string): CaseFile {
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
  return parseCaseFile(shownPath, text, path.dirname(absolute));
}

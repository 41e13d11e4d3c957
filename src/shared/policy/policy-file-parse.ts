// Parses one policy file: Cedar source text, or a JSON array of
// {"name", "source", "active"} entries whose inactive entries are skipped.
// Any problem rejects the whole file; the caller then denies everything.
import { POLICY_FILE_MAX_BYTES } from '../limits.js';
import { cedar } from './cedar-engine.js';
import { foldToOneLine } from '../text/one-line-text.js';
import { cedarErrorPosition, describeCedarErrors } from './cedar-diagnostics.js';
import { byteOffsetOf, splitCedarStatements } from './cedar-statements.js';
import { isRecord } from '../json-value.js';

export interface ParsedPolicy {
  id: string;
  file: string;
  text: string;
  /** Where the policy text sits, so validation offsets can become line numbers. */
  origin: { source: string; byteBase: number; label: string };
}

export type PolicyFileResult =
  | { ok: true; policies: ParsedPolicy[]; inactiveEntries: number }
  | { ok: false; error: string; position?: { line: number; column: number } };

class PolicyFileError extends Error {
  constructor(
    message: string,
    /** Where in a Cedar text file the problem is, when known (`symbi policy validate` shows it). */
    readonly position?: { line: number; column: number },
  ) {
    super(message);
  }
}

const ENTRY_KEYS = new Set(['name', 'source', 'active']);

/** Parses one policy file's text into its active policies, or says in one line why the whole file is rejected. */
export function parsePolicyFile(file: string, rawText: string): PolicyFileResult {
  try {
    if (Buffer.byteLength(rawText, 'utf8') > POLICY_FILE_MAX_BYTES) {
      throw new PolicyFileError(`larger than ${POLICY_FILE_MAX_BYTES} bytes, the limit for one policy file`);
    }
    // Cedar reads policy text as UTF-8, which a lone surrogate has no encoding in: refused, never replaced.
    if (!file.isWellFormed()) throw new PolicyFileError('file name not well-formed Unicode');
    if (!rawText.isWellFormed()) throw new PolicyFileError('not well-formed Unicode text (it holds a lone surrogate)');
    const text = rawText.startsWith('\uFEFF') ? rawText.slice(1) : rawText;
    const opening = text.trimStart()[0];
    if (opening === '[') return parseJsonForm(file, text);
    if (opening === '{') throw new PolicyFileError('a JSON object; the JSON form is an array of {"name", "source", "active"} objects');
    return { ok: true, policies: parseCedarSource(text, (k) => `${file}#${k}`, file, ''), inactiveEntries: 0 };
  } catch (error) {
    if (error instanceof PolicyFileError)
      return error.position === undefined ? { ok: false, error: error.message } : { ok: false, error: error.message, position: error.position };
    return { ok: false, error: `not parseable: ${foldToOneLine(error instanceof Error ? error.message : String(error))}` };
  }
}

function parseJsonForm(file: string, text: string): PolicyFileResult {
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch (error) {
    throw new PolicyFileError(`not valid JSON: ${foldToOneLine((error as Error).message)}`);
  }
  if (!Array.isArray(entries)) throw new PolicyFileError('not a JSON array; the JSON form is an array of {"name", "source", "active"} objects');
  const seen = new Set<string>();
  const policies: ParsedPolicy[] = [];
  let inactiveEntries = 0;
  entries.forEach((entry: unknown, index) => {
    const where = `entry ${index}`;
    if (!isRecord(entry)) {
      throw new PolicyFileError(`${where} is not an object; each entry is {"name": string, "source": string, "active": boolean}`);
    }
    const record = entry;
    const extra = Object.keys(record).filter((key) => !ENTRY_KEYS.has(key));
    if (extra.length > 0) throw new PolicyFileError(`${where} has unknown key ${JSON.stringify(extra[0])}; allowed keys: name, source, active`);
    const { name, source, active } = record;
    if (typeof name !== 'string' || name.trim() === '') throw new PolicyFileError(`${where}: "name" must be a non-empty string`);
    if (seen.has(name)) throw new PolicyFileError(`${where}: duplicate name ${JSON.stringify(name)}`);
    seen.add(name);
    if (typeof source !== 'string') throw new PolicyFileError(`${where} (${JSON.stringify(name)}): "source" must be a string of Cedar text`);
    if (!name.isWellFormed() || !source.isWellFormed()) {
      throw new PolicyFileError(`${where}: "name" and "source" must be well-formed Unicode (a \\u escape left a lone surrogate)`);
    }
    if (typeof active !== 'boolean') throw new PolicyFileError(`${where} (${JSON.stringify(name)}): "active" must be true or false`);
    if (!active) {
      inactiveEntries += 1;
      return;
    }
    const label = `entry ${JSON.stringify(name)}: `;
    const parsed = parseCedarSource(source, (k, count) => (count === 1 ? `${file}#${name}` : `${file}#${name}.${k}`), file, label);
    policies.push(...parsed);
  });
  return { ok: true, policies, inactiveEntries };
}

/** Parses Cedar text into its policies, in source order. Throws PolicyFileError on any problem. */
function parseCedarSource(source: string, idOf: (index: number, count: number) => string, file: string, label: string): ParsedPolicy[] {
  const answer = cedar.policySetTextToParts(source);
  if (answer.type === 'failure') {
    // Positions in a JSON entry's source are not positions in the file.
    const position = label === '' ? cedarErrorPosition(answer.errors, source) : undefined;
    throw new PolicyFileError(`${label}not valid Cedar: ${describeCedarErrors(answer.errors, source)}`, position);
  }
  if (answer.policy_templates.length > 0) {
    throw new PolicyFileError(`${label}holds a policy template (a ?principal or ?resource slot); only static policies are supported`);
  }
  const spans = orderedSpans(source, answer.policies);
  return spans.map((span, k) => ({
    id: idOf(k, spans.length),
    file,
    text: span.text,
    origin: { source, byteBase: span.byteBase, label },
  }));
}

/**
 * Cedar's split, put back in source order using our own statement scanner. Only when the
 * two agree exactly are positions used; otherwise Cedar's split stands, located by search.
 */
function orderedSpans(source: string, parts: readonly string[]): { text: string; byteBase: number }[] {
  const spans = splitCedarStatements(source);
  const ours = spans.map((span) => span.text).sort();
  const theirs = [...parts].sort();
  if (ours.length === theirs.length && ours.every((text, i) => text === theirs[i])) {
    return spans.map((span) => ({ text: span.text, byteBase: byteOffsetOf(source, span.start) }));
  }
  return parts.map((text) => {
    const at = source.indexOf(text);
    return { text, byteBase: at === -1 ? 0 : byteOffsetOf(source, at) };
  });
}

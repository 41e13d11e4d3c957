import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CommanderError, Option } from 'commander';
import { ConfinementError, decodeUtf8Strict, projectFilesUnavailable, type PinnedDirectory } from '../../shared/confinement/index.js';
import { POLICY_FILE_MAX_BYTES } from '../../shared/limits.js';
import { annotatedPolicyId } from '../../shared/policy/policy-label.js';
import type { RegistryEntry } from '../../shared/dsl/conversational-definition.js';
import { loadPolicySet, type LoadedPolicySet, type PolicyFileInput } from '../../shared/policy/policy-set.js';
import { authorizeRespond } from '../../shared/policy/respond-authorization.js';
import { respondRequestFor, respondResponseContext } from '../../shared/policy/respond-request.js';
import { finishWithheld } from '../../shared/provider/finish-reasons.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { agentPreflight } from '../invoke-preflight.js';
import { discoverAgentSources } from '../agent-discovery.js';
import { readPolicySet, registryOf } from '../startup-snapshot.js';
import { CaseFileError, parseCaseFile, readCaseFile, type CaseFile, type PolicyCase } from './policy-cases.js';
import { pinProjectOption, usageError, USAGE_EXIT } from './project-option.js';

// `symbi policy test`: runs written cases through the decision invoke_agent
// makes on an answer, with no model call: the same agent selection and
// pre-inference refusal (invoke-preflight.ts), the same finish-reason rule, the
// same respond request and context (respond-request.ts) and the same Cedar
// evaluation on the project's policy set, loaded as the server loads it.
// `symbi policy validate`: the policy files checked as the server checks them at
// startup, one line per problem with its file and line.

const CASES_DIRECTORY = ['policies', 'tests'] as const;
const CASE_FILES_MAX = 256;
const CASE_FILE_MAX_BYTES = 4 * 1024 * 1024;
/** Cases run with this run id: a real run's is random, and a policy that reads it gets a fixed, valid one. */
const CASE_RUN_ID = '00000000-0000-4000-8000-000000000000';

interface CaseOutcome {
  decision: 'allow' | 'deny';
  /** Where the decision was made: Cedar on the exact response, or an earlier refusal. */
  reason: string;
  determining: string[];
  errors: string[];
}

type CaseResult = { ok: true; outcome: CaseOutcome } | { ok: false; error: string };

/** Policy files named on the command line or in a case file, read as the loader expects them. */
function policyInputsFromPaths(files: readonly { shown: string; absolute: string }[]): PolicyFileInput[] {
  return files.map(({ shown, absolute }) => {
    try {
      const stat = fs.statSync(absolute);
      if (!stat.isFile()) return { path: shown, error: `${shown}: not a regular file` };
      if (stat.size > POLICY_FILE_MAX_BYTES) return { path: shown, error: `${shown}: larger than ${POLICY_FILE_MAX_BYTES} bytes, the limit for one policy file` };
      return { path: shown, text: fs.readFileSync(absolute, 'utf8') };
    } catch (error) {
      return { path: shown, error: `${shown}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
    }
  });
}

/** policies/tests/*.json of the project, read through the pinned directory, sorted by name. */
function defaultCaseFiles(project: PinnedDirectory): CaseFile[] {
  const shownDir = CASES_DIRECTORY.join('/');
  let dirFd: number;
  try {
    dirFd = project.openDirectory(CASES_DIRECTORY);
  } catch (error) {
    if (error instanceof ConfinementError && error.code === 'not_found') usageError('policy test', `${shownDir}/ does not exist in ${project.displayPath}; write cases there (docs/cedar-policies.md) or name case files`);
    usageError('policy test', `${shownDir}/ cannot be opened: ${error instanceof Error ? error.message : String(error)}`);
  }
  let names: string[];
  try {
    const listed = project.route.list(dirFd, CASE_FILES_MAX);
    if (listed.truncated) usageError('policy test', `${shownDir}/ has more than ${CASE_FILES_MAX} entries`);
    names = listed.names
      .map((raw) => {
        try {
          return decodeUtf8Strict(raw, 'entry');
        } catch {
          return '';
        }
      })
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort();
  } finally {
    fs.closeSync(dirFd);
  }
  if (names.length === 0) usageError('policy test', `${shownDir}/ holds no *.json case files`);
  return names.map((name) => {
    const shown = `${shownDir}/${name}`;
    let text: string;
    try {
      text = project.readTextFile(shown, CASE_FILE_MAX_BYTES, { allowPolicies: true }).text;
    } catch (error) {
      throw new CaseFileError(error instanceof Error ? error.message : `${shown}: cannot be read`);
    }
    return parseCaseFile(shown, text, project);
  });
}

interface PolicyLabel {
  id: string;
  annotated: string | undefined;
  shown: string;
}

function policyLabels(set: LoadedPolicySet): Map<string, PolicyLabel> {
  const labels = new Map<string, PolicyLabel>();
  for (const policy of set.policies) {
    const annotated = annotatedPolicyId(policy.text);
    // A Cedar text file's policies are "file#N"; a JSON file's are "file#name", whose line counts in the entry's source.
    const where = policy.id === `${policy.file}#${policy.id.slice(policy.file.length + 1)}` && /^\d+$/.test(policy.id.slice(policy.file.length + 1))
      ? `${policy.file}:${policy.line}`
      : `${policy.file}, entry ${JSON.stringify(policy.id.slice(policy.file.length + 1))}, line ${policy.line} of its source`;
    labels.set(policy.id, { id: policy.id, annotated, shown: `${annotated ?? policy.id} (${where})` });
  }
  return labels;
}

function runCase(c: PolicyCase, set: LoadedPolicySet, project: PinnedDirectory, registry: readonly RegistryEntry[]): CaseResult {
  const verdict = agentPreflight(c.agent, { projectAccess: project.access, registry, policySet: set });
  if (!verdict.ok) {
    // Refused before the model: when no answer could be permitted, every answer is denied.
    if (verdict.stage === 'policy') return { ok: true, outcome: { decision: 'deny', reason: `refused before the model is called: ${verdict.message}`, determining: [], errors: [] } };
    return { ok: false, error: verdict.message };
  }
  const withheld = finishWithheld(c.finishReason, c.providerFinishReason === '' ? null : c.providerFinishReason);
  if (withheld !== undefined) return { ok: true, outcome: { decision: 'deny', reason: `${withheld} before Cedar is asked`, determining: [], errors: [] } };
  const request = respondRequestFor(verdict.definition, CASE_RUN_ID, respondResponseContext(c.response, c.finishReason, c.providerFinishReason));
  const decision = authorizeRespond(set, request);
  return { ok: true, outcome: { decision: decision.decision, reason: decision.reason, determining: decision.determining_policies, errors: decision.errors } };
}

function describeDecision(outcome: CaseOutcome, labels: Map<string, PolicyLabel>): string {
  const shown = outcome.determining.map((id) => labels.get(id)?.shown ?? id);
  if (shown.length > 0 && outcome.errors.length === 0) return `${outcome.decision === 'allow' ? 'permitted' : 'forbidden'} by ${shown.join(', ')}`;
  if (outcome.errors.length > 0) return `a policy could not be evaluated: ${shown.join(', ')}`;
  return outcome.reason;
}

function determiningMatches(expected: readonly string[], outcome: CaseOutcome, labels: Map<string, PolicyLabel>): boolean {
  const names = (id: string) => [id, labels.get(id)?.annotated].filter((n): n is string => n !== undefined);
  if (expected.length !== outcome.determining.length) return false;
  return expected.every((want) => outcome.determining.some((id) => names(id).includes(want)));
}

export function runPolicyTest(options: { project: string; files: string[] }): void {
  const project = pinProjectOption(options.project, 'policy test');
  if (!project.access.available) {
    process.stderr.write(`symbi policy test: ${projectFilesUnavailable(project.access.reason)}\n`);
    process.exitCode = 1;
    return;
  }
  let files: CaseFile[];
  try {
    files = options.files.length > 0 ? options.files.map((file) => readCaseFile(file, project)) : defaultCaseFiles(project);
  } catch (error) {
    if (!(error instanceof CaseFileError)) throw error;
    usageError('policy test', escapeToOneLine(error.message));
  }
  const registry = registryOf(discoverAgentSources(project));
  let projectSet: LoadedPolicySet | undefined;
  const out: string[] = [];
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    const set = file.policies !== undefined ? loadPolicySet(file.policies) : (projectSet ??= readPolicySet(project).set);
    const source = file.policies !== undefined ? file.policies.map((p) => p.path).join(', ') : 'the project policy set';
    out.push(`${file.shown} (${source}):`);
    if (set.mode === 'deny-all') out.push(`  note  the policy set denies every response: ${set.denyReason ?? 'unusable'}`);
    const labels = policyLabels(set);
    for (const c of file.cases) {
      const result = runCase(c, set, project, registry);
      if (!result.ok) {
        failed += 1;
        out.push(`  FAIL  ${JSON.stringify(c.name)}: agent ${JSON.stringify(c.agent)} cannot be invoked: ${result.error}`);
        continue;
      }
      const { outcome } = result;
      const decisionOk = outcome.decision === c.expect;
      const determiningOk = c.determining === undefined || determiningMatches(c.determining, outcome, labels);
      const ok = decisionOk && determiningOk;
      if (ok) passed += 1;
      else failed += 1;
      const expected = decisionOk ? ', as expected' : `, expected ${c.expect}`;
      out.push(`  ${ok ? 'pass' : 'FAIL'}  ${JSON.stringify(c.name)}: ${outcome.decision}${expected}: ${describeDecision(outcome, labels)}`);
      if (!determiningOk) out.push(`        expected determining policies: ${c.determining!.length === 0 ? 'none' : c.determining!.join(', ')}`);
      for (const error of outcome.errors) out.push(`        policy error: ${error}`);
    }
  }
  const total = passed + failed;
  out.push(`${total} ${total === 1 ? 'case' : 'cases'}: ${passed} passed, ${failed} failed`);
  process.stdout.write(`${out.map((line) => escapeToOneLine(line)).join('\n')}\n`);
  process.exitCode = failed === 0 ? 0 : 1;
}

export function runPolicyValidate(options: { project: string; files: string[] }): void {
  let set: LoadedPolicySet;
  if (options.files.length > 0) {
    set = loadPolicySet(policyInputsFromPaths(options.files.map((file) => ({ shown: file, absolute: path.resolve(file) }))));
  } else {
    const project = pinProjectOption(options.project, 'policy validate');
    set = readPolicySet(project).set;
  }
  const out: string[] = [];
  for (const notice of set.notices) if (!notice.includes(': rejected: ')) out.push(notice);
  for (const d of set.diagnostics) {
    const at = d.line === null ? d.file : `${d.file}:${d.line}${d.column === null ? '' : `:${d.column}`}`;
    out.push(`${at}: ${d.severity}: ${d.message}`);
  }
  if (set.mode === 'deny-all') out.push(`result: the policy set denies every response: ${set.denyReason ?? 'unusable'}`);
  else if (set.mode === 'default-permit') out.push('result: no policy files; the default permission for respond applies');
  else out.push(`result: ${set.policies.length} ${set.policies.length === 1 ? 'policy validates' : 'policies validate'} against the respond schema`);
  process.stdout.write(`${out.map((line) => escapeToOneLine(line)).join('\n')}\n`);
  process.exitCode = set.mode === 'deny-all' ? 1 : 0;
}

/** Adds `symbi policy test` and `symbi policy validate` to the command line. */
export function registerPolicyCommand(program: Command): void {
  const usageExit = (err: CommanderError) => {
    process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
  };
  const policy = program.command('policy').description('Test and validate the Cedar policies that judge invoke_agent answers').exitOverride(usageExit);
  policy
    .command('test')
    .description('Run policy test cases (default: policies/tests/*.json) through the decision the server makes, without calling a model')
    .argument('[files...]', 'case files (JSON, docs/cedar-policies.md)')
    .addOption(new Option('--project <dir>', 'project directory whose agents and policies are used (default: the current directory)').default('.'))
    .exitOverride(usageExit)
    .action((files: string[], raw: { project: string }) => {
      runPolicyTest({ project: raw.project, files });
    });
  policy
    .command('validate')
    .description("Check the project's policy files (or the files named) against the respond schema, as the server does at startup")
    .argument('[files...]', 'policy files to check instead of the project set')
    .addOption(new Option('--project <dir>', 'project directory (default: the current directory)').default('.'))
    .exitOverride(usageExit)
    .action((files: string[], raw: { project: string }) => {
      runPolicyValidate({ project: raw.project, files });
    });
}

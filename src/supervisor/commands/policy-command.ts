import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CommanderError, Option } from 'commander';
import { ConfinementError, decodeUtf8Strict, projectFilesUnavailable, type PinnedDirectory } from '../../shared/confinement/index.js';
import { POLICY_FILE_MAX_BYTES } from '../../shared/limits.js';
import type { RegistryEntry } from '../../shared/dsl/conversational-definition.js';
import { loadPolicySet, policyNoticeText, type LoadedPolicySet, type PolicyFileInput } from '../../shared/policy/policy-set.js';
import { authorizeRespond } from '../../shared/policy/respond-authorization.js';
import {
  ACTION_UID,
  RESOURCE_UID,
  cedarRequestParts,
  cedarResponse,
  respondRequestFor,
  respondResponseContext,
  type RespondRequest,
} from '../../shared/policy/respond-request.js';
import { finishWithheld } from '../../shared/provider/finish-reasons.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { refusalText } from '../runs/agent-refusal.js';
import { agentPreflight } from '../runs/invoke-preflight.js';
import { discoverAgentSources } from '../startup/agent-discovery.js';
import { readPolicySet, registryOf } from '../startup/startup-snapshot.js';
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
      if (stat.size > POLICY_FILE_MAX_BYTES)
        return { path: shown, error: `${shown}: larger than ${POLICY_FILE_MAX_BYTES} bytes, the limit for one policy file` };
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
    if (error instanceof ConfinementError && error.code === 'not_found')
      usageError('policy test', `${shownDir}/ does not exist in ${project.displayPath}; write cases there (docs/cedar-policies.md) or name case files`);
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

/** Cedar id → the policy's one name (policy-label.ts), and the names a case may expect it by. */
function policyLabels(set: LoadedPolicySet): Map<string, { label: string; names: string[] }> {
  const labels = new Map<string, { label: string; names: string[] }>();
  for (const policy of set.policies) labels.set(policy.id, { label: policy.label, names: [policy.label, policy.id] });
  return labels;
}

interface CaseRun {
  result: CaseResult;
  /** The declared name the case's alias runs as, when it differs from the alias. */
  declaredName?: string;
  /** The Cedar request the case builds (principal, action, resource, context, entities), the response text left out. */
  request?: Record<string, unknown>;
}

function runCase(c: PolicyCase, set: LoadedPolicySet, project: PinnedDirectory, registry: readonly RegistryEntry[]): CaseRun {
  const verdict = agentPreflight(c.agent, { projectAccess: project.access, registry, policySet: set });
  if (!verdict.ok) {
    // Refused before the model: when no answer could be permitted, every answer is denied.
    const reason = refusalText(verdict.refusal);
    if (verdict.refusal.kind === 'policy_denies_every_response')
      return { result: { ok: true, outcome: { decision: 'deny', reason: `refused before the model is called: ${reason}`, determining: [], errors: [] } } };
    return { result: { ok: false, error: reason } };
  }
  const declared = verdict.definition.declaredName;
  const declaredName = declared !== c.agent ? declared : undefined;
  const request = respondRequestFor(verdict.definition, CASE_RUN_ID, respondResponseContext(c.response, c.finishReason, c.providerFinishReason));
  const shownRequest = cedarRequestShown(request);
  const withheld = finishWithheld(c.finishReason, c.providerFinishReason === '' ? null : c.providerFinishReason);
  if (withheld !== undefined)
    return {
      result: { ok: true, outcome: { decision: 'deny', reason: `${withheld} before Cedar is asked`, determining: [], errors: [] } },
      declaredName,
      request: shownRequest,
    };
  const decision = authorizeRespond(set, request);
  return {
    result: {
      ok: true,
      outcome: { decision: decision.decision, reason: decision.reason, determining: decision.determining_policies, errors: decision.errors },
    },
    declaredName,
    request: shownRequest,
  };
}

/** The request as Cedar receives it; the response text is the case's own and is not printed (its hash and size are). */
function cedarRequestShown(request: RespondRequest): Record<string, unknown> | undefined {
  try {
    const parts = cedarRequestParts(request);
    const response = cedarResponse(request.context.response);
    return {
      principal: parts.principal,
      action: ACTION_UID,
      resource: RESOURCE_UID,
      context: { ...parts.baseContext, response: { ...response, content: `<${response.bytes} bytes, the case's response text, not printed>` } },
      entities: parts.entities,
    };
  } catch {
    return undefined; // authorizeRespond reports the same problem as the case's reason
  }
}

function describeDecision(outcome: CaseOutcome, labels: ReadonlyMap<string, { label: string }>): string {
  const shown = outcome.determining.map((id) => labels.get(id)?.label ?? id);
  if (shown.length > 0 && outcome.errors.length === 0) return `${outcome.decision === 'allow' ? 'permitted' : 'forbidden'} by ${shown.join(', ')}`;
  if (outcome.errors.length > 0) return `a policy could not be evaluated: ${shown.join(', ')}`;
  return outcome.reason;
}

function determiningMatches(expected: readonly string[], outcome: CaseOutcome, labels: ReadonlyMap<string, { names: string[] }>): boolean {
  const names = (id: string) => labels.get(id)?.names ?? [id];
  if (expected.length !== outcome.determining.length) return false;
  return expected.every((want) => outcome.determining.some((id) => names(id).includes(want)));
}

export interface PolicyTestOptions {
  project: string;
  files: string[];
  json?: boolean;
  junit?: string;
  case?: string;
  showRequest?: boolean;
}

/** One case's result as `--json` and `--junit` report it. */
interface CaseReport {
  file: string;
  name: string;
  agent: string;
  declared_name: string | null;
  expect: 'allow' | 'deny';
  decision: 'allow' | 'deny' | null;
  passed: boolean;
  /** Why it failed (null when it passed). */
  failure: string | null;
  /** How the decision was made; determining policies by label. */
  reason: string | null;
  determining: string[];
  expected_determining: string[] | null;
  errors: string[];
  request?: Record<string, unknown> | null;
}

export function runPolicyTest(options: PolicyTestOptions): void {
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
  if (options.case !== undefined) {
    const wanted = options.case;
    const names = files.flatMap((file) => file.cases.map((c) => c.name));
    if (!names.includes(wanted)) {
      const shown =
        names
          .slice(0, 20)
          .map((n) => JSON.stringify(n))
          .join(', ') + (names.length > 20 ? `, and ${names.length - 20} more` : '');
      usageError('policy test', escapeToOneLine(`no case is named ${JSON.stringify(wanted)}; the cases are ${shown}`));
    }
    files = files.map((file) => ({ ...file, cases: file.cases.filter((c) => c.name === wanted) })).filter((file) => file.cases.length > 0);
  }
  const registry = registryOf(discoverAgentSources(project));
  let projectSet: LoadedPolicySet | undefined;
  const out: string[] = [];
  const reports: CaseReport[] = [];
  for (const file of files) {
    const set = file.policies !== undefined ? loadPolicySet(file.policies) : (projectSet ??= readPolicySet(project).set);
    const source = file.policies !== undefined ? file.policies.map((p) => p.path).join(', ') : 'the project policy set';
    if (set.mode === 'deny-all') {
      // A broken set would fail (or pass) every case for the same reason: reported once, and the run stops.
      brokenSet(options, file.shown, source, set.denyReason ?? 'the configured policy set is unusable', reports);
      return;
    }
    out.push(`${file.shown} (${source}):`);
    const labels = policyLabels(set);
    for (const c of file.cases) {
      const run = runCase(c, set, project, registry);
      const base = {
        file: file.shown,
        name: c.name,
        agent: c.agent,
        declared_name: run.declaredName ?? null,
        expect: c.expect,
        expected_determining: c.determining ?? null,
        ...(options.showRequest === true ? { request: run.request ?? null } : {}),
      };
      const { result } = run;
      if (!result.ok) {
        const failure = `agent ${JSON.stringify(c.agent)} cannot be invoked: ${result.error}`;
        out.push(`  FAIL  ${JSON.stringify(c.name)}: ${failure}`);
        reports.push({ ...base, decision: null, passed: false, failure, reason: null, determining: [], errors: [] });
        continue;
      }
      const { outcome } = result;
      const decisionOk = outcome.decision === c.expect;
      const determiningOk = c.determining === undefined || determiningMatches(c.determining, outcome, labels);
      const ok = decisionOk && determiningOk;
      const expected = decisionOk ? ', as expected' : `, expected ${c.expect}`;
      const described = describeDecision(outcome, labels);
      out.push(`  ${ok ? 'pass' : 'FAIL'}  ${JSON.stringify(c.name)}: ${outcome.decision}${expected}: ${described}`);
      const expectedDeterminingLine = `expected determining policies: ${c.determining?.length === 0 ? 'none' : (c.determining ?? []).join(', ')}`;
      if (!determiningOk) out.push(`        ${expectedDeterminingLine}`);
      if (run.declaredName !== undefined) {
        out.push(
          `        note: agent ${JSON.stringify(c.agent)} runs as its declared name ${JSON.stringify(run.declaredName)}; policies see context.agent.name == ${JSON.stringify(run.declaredName)}, never the alias`,
        );
      }
      for (const error of outcome.errors) out.push(`        policy error: ${error}`);
      if (options.showRequest === true && run.request !== undefined) out.push(`        request: ${JSON.stringify(run.request)}`);
      const failure = ok ? null : !decisionOk ? `${outcome.decision}, expected ${c.expect}: ${described}` : `${described}; ${expectedDeterminingLine}`;
      reports.push({
        ...base,
        decision: outcome.decision,
        passed: ok,
        failure,
        reason: described,
        determining: outcome.determining.map((id) => labels.get(id)?.label ?? id),
        errors: outcome.errors,
      });
    }
  }
  const passed = reports.filter((r) => r.passed).length;
  const failed = reports.length - passed;
  out.push(`${reports.length} ${reports.length === 1 ? 'case' : 'cases'}: ${passed} passed, ${failed} failed`);
  const written = options.junit === undefined || writeJunit(options.junit, reports, null);
  if (options.json === true)
    process.stdout.write(`${JSON.stringify({ passed, failed, total: reports.length, policy_set_error: null, cases: reports }, null, 2)}\n`);
  else process.stdout.write(`${out.map((line) => escapeToOneLine(line)).join('\n')}\n`);
  // A CI that asked for a report and got none must not read the run as passed.
  process.exitCode = failed === 0 && written ? 0 : 1;
}

/** The run stops at a policy set that denies everything: one report, in every format asked for. */
function brokenSet(options: PolicyTestOptions, caseFile: string, source: string, why: string, earlier: CaseReport[]): void {
  const error = { case_file: caseFile, policies: source, message: why };
  const line = `the policy set (${source}) used by ${caseFile} denies every response, so no case was run: ${why}; see \`symbi policy validate\``;
  if (options.junit !== undefined) writeJunit(options.junit, earlier, line);
  if (options.json === true) process.stdout.write(`${JSON.stringify({ passed: 0, failed: 0, total: 0, policy_set_error: error, cases: [] }, null, 2)}\n`);
  else process.stderr.write(`symbi policy test: ${escapeToOneLine(line)}\n`);
  process.exitCode = 1;
}

/** JUnit XML (the Ant schema CI systems read): one testsuite per case file, one testcase per case. */
/** Writes the report; false (with one line on stderr) when FILE cannot be written. */
function writeJunit(file: string, reports: readonly CaseReport[], setError: string | null): boolean {
  const suites = new Map<string, CaseReport[]>();
  for (const report of reports) suites.set(report.file, [...(suites.get(report.file) ?? []), report]);
  const failures = reports.filter((r) => !r.passed).length + (setError === null ? 0 : 1);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="symbi policy test" tests="${reports.length + (setError === null ? 0 : 1)}" failures="${failures}" errors="0">`,
  ];
  for (const [name, cases] of suites) {
    lines.push(`  <testsuite name="${xml(name)}" tests="${cases.length}" failures="${cases.filter((c) => !c.passed).length}" errors="0">`);
    for (const c of cases) {
      if (c.passed) lines.push(`    <testcase classname="${xml(name)}" name="${xml(c.name)}"/>`);
      else lines.push(`    <testcase classname="${xml(name)}" name="${xml(c.name)}">`, `      <failure message="${xml(c.failure ?? '')}"/>`, '    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  if (setError !== null) {
    lines.push(
      '  <testsuite name="policy set" tests="1" failures="1" errors="0">',
      '    <testcase classname="policy set" name="the policy set loads">',
      `      <failure message="${xml(setError)}"/>`,
      '    </testcase>',
      '  </testsuite>',
    );
  }
  lines.push('</testsuites>');
  try {
    fs.writeFileSync(path.resolve(file), `${lines.join('\n')}\n`);
    return true;
  } catch (error) {
    process.stderr.write(
      `symbi policy test: --junit ${escapeToOneLine(file)} cannot be written (${(error as NodeJS.ErrnoException).code ?? 'error'}); allowed: a writable file path\n`,
    );
    return false;
  }
}

/** Text for an XML attribute: markup escaped, and characters XML 1.0 cannot hold replaced. */
function xml(text: string): string {
  return (
    text
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/\n/g, '&#10;')
      // oxlint-disable-next-line no-control-regex -- XML 1.0 has no encoding for these
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
  );
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
  // A rejected file's line comes from its diagnostics below, with its line and column.
  for (const notice of set.notices) if (notice.kind !== 'rejected') out.push(policyNoticeText(notice));
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
    .option('--case <name>', 'run only the case with this name (in whichever case file holds it)')
    .option('--json', 'print one JSON document on stdout instead of text (docs/cedar-policies.md)')
    .option('--junit <file>', 'also write the results as JUnit XML to this file, for CI')
    .option('--show-request', 'print the Cedar request each case builds (the response text left out)')
    .addHelpText(
      'after',
      '\nExit status: 0 when every case passes; 1 when a case fails or the policy set is broken (reported once, no case run); 2 on a usage error.',
    )
    .exitOverride(usageExit)
    .action((files: string[], raw: { project: string; case?: string; json?: boolean; junit?: string; showRequest?: boolean }) => {
      runPolicyTest({ project: raw.project, files, case: raw.case, json: raw.json, junit: raw.junit, showRequest: raw.showRequest });
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

// Checks the loaded policies against the respond schema (Cedar's strict validation) and
// sorts the findings into what breaks the set and what is only worth a warning.
//
// Cedar skips a policy whose evaluation errors: a forbid that cannot be evaluated (a
// method strings do not have, an attribute the schema does not name, a misused extension
// function) would silently stop withholding text. So a validation error in any policy that
// can apply to Action::"respond" makes the set malformed, and a malformed set denies all.
// A policy whose action scope names only other actions can never apply to this request
// (shared policies/*.cedar also serve other Symbiont surfaces; Cedar checks the scope
// before the conditions), so its findings, like Cedar's validation warnings, are warnings.
import { cedar, type DetailedError } from './cedar-engine.js';
import { foldToOneLine } from '../text/one-line-text.js';
import { cedarErrorPosition, describeCedarErrors } from './cedar-diagnostics.js';
import type { ParsedPolicy } from './policy-file-parse.js';
import { policyLabel } from './policy-label.js';
import { RESPOND_SCHEMA_TEXT } from './respond-schema.js';

export interface SchemaFindings {
  /** One line per finding that makes the set malformed, naming the policy, line and error. */
  errors: string[];
  /** Findings that do not change any decision. */
  warnings: string[];
  /** The same findings, each with its file and, in a Cedar text file, its line and column. */
  diagnostics: PolicyDiagnostic[];
}

/** One problem of a policy file, located for `symbi policy validate`. */
export interface PolicyDiagnostic {
  severity: 'error' | 'warning';
  file: string;
  line: number | null;
  column: number | null;
  message: string;
}

export function validateRespondPolicies(policies: readonly ParsedPolicy[]): SchemaFindings {
  const byId = new Map(policies.map((policy) => [policy.id, policy]));
  // Findings name a policy as every other surface does (policy-label.ts).
  const labels = new Map(policies.map((policy) => [policy.id, policyLabel(policy)]));
  const named = (policyId: string): string => labels.get(policyId) ?? policyId;
  const staticPolicies: Record<string, string> = {};
  for (const policy of policies) staticPolicies[policy.id] = policy.text;
  let answer;
  try {
    answer = cedar.validate({ schema: RESPOND_SCHEMA_TEXT, policies: { staticPolicies } });
  } catch (error) {
    return unvalidated(foldToOneLine(String(error)));
  }
  if (answer.type === 'failure') return unvalidated(describeCedarErrors(answer.errors));

  const located = (policyId: string, error: DetailedError): string => {
    const policy = byId.get(policyId);
    if (policy === undefined) return `${policyId}: ${describeCedarErrors([error])}`;
    const { source, byteBase, label } = policy.origin;
    // Cedar repeats the policy id inside the message; the line already starts with it.
    const message = { ...error, message: error.message.replace(/^for policy `[^`]*`, /, '') };
    return `${named(policy.id)}: ${label}${describeCedarErrors([message], source, byteBase)}`;
  };
  const diagnostics: PolicyDiagnostic[] = [];
  const diagnose = (severity: PolicyDiagnostic['severity'], policyId: string, error: DetailedError, note = ''): void => {
    const policy = byId.get(policyId);
    const message = `${named(policyId)}: ${describeCedarErrors([{ ...error, message: error.message.replace(/^for policy `[^`]*`, /, '') }])}${note}`;
    // Positions inside a JSON entry's source are not positions in the file.
    const position = policy !== undefined && policy.origin.label === '' ? cedarErrorPosition([error], policy.origin.source, policy.origin.byteBase) : undefined;
    diagnostics.push({
      severity,
      file: policy?.file ?? policyId,
      line: position?.line ?? null,
      column: position?.column ?? null,
      message: foldToOneLine(message),
    });
  };
  const errors: string[] = [];
  const warnings: string[] = [];
  for (const finding of answer.validationErrors) {
    const line = located(finding.policyId, finding.error);
    const policy = byId.get(finding.policyId);
    if (policy !== undefined && !canApplyToRespond(policy.text)) {
      const note = ' (the policy names only other actions, so it never applies to respond)';
      warnings.push(`${line}${note}`);
      diagnose('warning', finding.policyId, finding.error, note);
    } else {
      errors.push(line);
      diagnose('error', finding.policyId, finding.error);
    }
  }
  for (const finding of answer.validationWarnings) {
    warnings.push(located(finding.policyId, finding.error));
    diagnose('warning', finding.policyId, finding.error);
  }
  for (const error of answer.otherWarnings) {
    warnings.push(describeCedarErrors([error]));
    diagnostics.push({ severity: 'warning', file: 'policies', line: null, column: null, message: foldToOneLine(describeCedarErrors([error])) });
  }
  return { errors: errors.map((text) => foldToOneLine(text)), warnings: warnings.map((text) => foldToOneLine(text)), diagnostics };
}

/** Cedar could not run the validation at all: nothing is known to be sound, so the set is malformed. */
function unvalidated(why: string): SchemaFindings {
  const error = `the policies could not be validated against the respond schema: ${why}`;
  return { errors: [error], warnings: [], diagnostics: [{ severity: 'error', file: 'policies', line: null, column: null, message: error }] };
}

const RESPOND = { type: 'Action', id: 'respond' };

/**
 * False only when the action scope is `action == A` or `action in [A, ...]` / `action in A`
 * without Action::"respond" among them: the respond schema declares no action groups, so
 * such a policy's scope is false for every respond request. Anything unclear can apply.
 */
function canApplyToRespond(text: string): boolean {
  let answer;
  try {
    answer = cedar.policyToJson(text);
  } catch {
    return true;
  }
  if (answer.type !== 'success') return true;
  const scope = (answer.json as { action?: { op?: string; entity?: unknown; entities?: unknown[] } }).action;
  if (scope === undefined) return true;
  const named = scope.op === '==' || scope.op === 'in' ? (scope.entities ?? (scope.entity === undefined ? [] : [scope.entity])) : null;
  if (named === null || named.length === 0) return true;
  return named.some((entity) => {
    const uid = entity as { type?: unknown; id?: unknown };
    return uid.type === RESPOND.type && uid.id === RESPOND.id;
  });
}

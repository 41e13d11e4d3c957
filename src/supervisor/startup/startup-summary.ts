import { projectFilesUnavailable } from '../../shared/confinement/index.js';
import { policyNoticeText } from '../../shared/policy/policy-set.js';
import { describeProvider, type ProviderSelection } from '../../shared/provider/provider-config.js';
import type { OperatorLog } from '../operator/operator-log.js';
import { noAgentsFolderMessage } from './nearest-project.js';
import { shownName } from '../../shared/dsl/shown-name.js';
import type { AgentSummary } from '../../shared/dsl/source-summary.js';
import type { SourceAnalysis } from './source-analysis.js';
import type { StartupSnapshot } from './startup-snapshot.js';

// The first lines an operator sees on standard error: what was pinned, which
// agents can be invoked, what was left out and why, which limits were hit,
// how the policy set loaded, and the audit public key to record. Long lists
// are cut so the summary stays readable at a glance; list_agents has them all.

const SUMMARY_MAX_LISTED = 50;

function agentName(a: AgentSummary): string {
  if (a.verdict.invocable) return shownName(a.verdict.declaredName);
  return a.declared_agents.length > 0 ? shownName(a.declared_agents.join(',')) : a.stem;
}

/** The summary's first line, written at once; the rest waits for the analysis of the agent sources. */
export function writeProjectSummary(snapshot: StartupSnapshot, log: OperatorLog): void {
  log.info(`project pinned: ${snapshot.project.path}`, { event: 'startup.project', path: snapshot.project.path });
  if (!snapshot.projectAccess.available) {
    // One line with the true reason; the usual summary would only repeat it for every part.
    log.warn(
      `${projectFilesUnavailable(snapshot.projectAccess.reason)}. list_agents, get_agent_dsl, parse_dsl {file}, get_agents_md, the AGENTS.md resource and invoke_agent refuse with this reason, and the policy set denies every response`,
      { event: 'startup.project_access' },
    );
    return;
  }
  const access = snapshot.projectAccess;
  log.info(`project files: confinement route ${access.route.name} (${access.route.description}); ${access.why}`, {
    event: 'startup.confinement_route',
    route: access.route.name,
  });
}

/**
 * The rest of the summary, once the agent sources are analysed (after writeProjectSummary).
 * `refusalOf` words why invoke_agent refuses an agent whatever the call, or gives undefined when
 * it would run it: the decision list_agents shows (runs/agent-refusal.ts, a room above this one).
 */
export function writeStartupSummary(
  snapshot: StartupSnapshot,
  analysis: SourceAnalysis,
  log: OperatorLog,
  refusalOf: (agent: AgentSummary) => string | undefined,
): void {
  if (!snapshot.projectAccess.available) return;
  const { agents, skipped } = analysis;
  const refusals = new Map(agents.map((a) => [a, refusalOf(a)]));
  const invocable = agents.filter((a) => refusals.get(a) === undefined).length;

  const dir = snapshot.agentsDirectory;
  if (dir.problem) log.warn(dir.problem, { event: 'startup.agents_dir' });
  else if (!dir.present) log.warn(noAgentsFolderMessage(snapshot.project.path), { event: 'startup.agents_dir' });
  log.info(`agents: ${agents.length} found, ${invocable} invocable, ${skipped.length} left out`, {
    event: 'startup.agents',
    found: agents.length,
    invocable,
    left_out: skipped.length,
  });
  for (const a of agents.slice(0, SUMMARY_MAX_LISTED)) {
    const refusal = refusals.get(a);
    const state = refusal === undefined ? 'invocable' : `not invocable: ${refusal}`;
    log.info(`  agent ${agentName(a)} (${a.file}): ${state}`, { event: 'startup.agent', stem: a.stem, file: a.file, invocable: refusal === undefined });
  }
  if (agents.length > SUMMARY_MAX_LISTED) {
    log.info(`  ... and ${agents.length - SUMMARY_MAX_LISTED} more agents (the list_agents tool shows all)`, { event: 'startup.agent' });
  }
  for (const s of skipped.slice(0, SUMMARY_MAX_LISTED)) {
    log.warn(`left out ${s.file}: ${s.reason}`, { event: 'startup.left_out', file: s.file });
  }
  if (skipped.length > SUMMARY_MAX_LISTED) {
    log.warn(`... and ${skipped.length - SUMMARY_MAX_LISTED} more files left out (the list_agents tool shows all)`, { event: 'startup.left_out' });
  }
  if (snapshot.limitsHit.length === 0) log.info('limits hit: none', { event: 'startup.limits' });
  for (const limit of snapshot.limitsHit) log.warn(`limit hit: ${limit}`, { event: 'startup.limits' });

  const md = snapshot.agentsMd;
  if (md.present) {
    const guidance = md.guidance
      ? `generated section ${md.guidance.originalChars} characters${md.guidance.cut ? ' (cut to the 2,000-character guidance limit)' : ''}`
      : 'no generated section';
    log.info(`AGENTS.md: ${md.bytes} bytes, ${guidance}`, { event: 'startup.agents_md', bytes: md.bytes });
  } else if (md.missing) {
    log.info('AGENTS.md: not present (get_agents_md answers that it does not exist)', { event: 'startup.agents_md' });
  } else {
    log.warn(`AGENTS.md left out: ${md.reason}`, { event: 'startup.agents_md' });
  }

  const policy = snapshot.policy.set;
  for (const notice of policy.notices) log.info(`policy: ${policyNoticeText(notice)}`, { event: 'startup.policy', mode: policy.mode });
  for (const warning of policy.warnings) log.warn(`policy: ${warning}`, { event: 'startup.policy' });
  if (policy.mode === 'deny-all') {
    log.warn(`policy set denies every response: ${policy.denyReason ?? 'the configured policy set is unusable'}`, {
      event: 'startup.policy',
      mode: policy.mode,
    });
  }

  if (snapshot.audit.ready) {
    log.info(`audit public key (record it to verify journals): ${snapshot.audit.publicKeyHex}`, {
      event: 'startup.audit',
      public_key: snapshot.audit.publicKeyHex,
      journal_dir: snapshot.audit.governedPath,
    });
  } else if (snapshot.audit.notCreated === true) {
    log.info(`audit storage: ${snapshot.audit.reason}`, { event: 'startup.audit' });
  } else {
    log.warn(`audit storage unusable: ${snapshot.audit.reason}; invoke_agent will refuse, the file tools keep working`, { event: 'startup.audit' });
  }
}

/** Which model provider invoke_agent will call (wire format, URL, model, proxy), or why it will refuse. Never the key. */
export function writeProviderSummary(provider: ProviderSelection, log: OperatorLog): void {
  if (provider.ok) log.info(`provider: ${describeProvider(provider.config)}`, { event: 'startup.provider' });
  else log.warn(`provider: none usable: ${provider.message}; invoke_agent will refuse, the file tools keep working`, { event: 'startup.provider' });
}

import type { Command } from 'commander';
import { CommanderError, Option } from 'commander';
import type { PinnedDirectory } from '../../shared/confinement/index.js';
import { AGENTS_MD_GUIDANCE_MAX_CHARS, AGENTS_MD_MAX_BYTES } from '../../shared/limits.js';
import { describeProvider, providerFromEnvironment, shownProxy, type ProviderSelection } from '../../shared/provider/provider-config.js';
import { policyNoticeText } from '../../shared/policy/policy-set.js';
import { closeAuditStorage } from '../../shared/storage/audit-storage.js';
import { checkProjectDirectories } from '../../shared/storage/directory-ownership.js';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { sourceStem } from '../startup/agent-discovery.js';
import { DslAnalysisPool } from '../threads/dsl-analysis-pool.js';
import { createOperatorLog } from '../operator/operator-log.js';
import { agentStandings, refusalText, type AgentRefusal, type AgentStanding } from '../runs/agent-refusal.js';
import { analyseSources, type SourceAnalysis } from '../startup/source-analysis.js';
import { takeStartupSnapshot, type AuditStorageHandle, type StartupSnapshot } from '../startup/startup-snapshot.js';
import { probeProvider, type OnlineOutcome } from './provider-probe.js';
import { pinProjectOption, USAGE_EXIT } from './project-option.js';
import { fileModeText } from '../../shared/text/file-mode.js';

// `symbi check`: what `symbi mcp` decides at startup, as a report and an exit
// status, for a project's CI and for a newcomer before connecting a client.
// Every verdict comes from the server's own code: the startup snapshot (route
// choice and self-test, agent discovery, policy loading, AGENTS.md, the audit
// storage and its key), the startup analysis of the agent sources, the
// preflight invoke_agent runs for each agent, and the provider selection. So it
// creates nothing `symbi mcp` would not create at startup (.symbiont/governed/
// and its signing key). docs/check.md describes the report; docs/check.schema.json its JSON.

/** ok: as configured; info: worth knowing; warn: a finding (fails with --strict); fail: the server would not serve as configured. */
export type Severity = 'ok' | 'info' | 'warn' | 'fail';
export type Section = 'confinement' | 'agents' | 'policy' | 'agents_md' | 'storage' | 'provider';

const SECTION_TITLES: Record<Section, string> = {
  confinement: 'confinement',
  agents: 'agents',
  policy: 'policy',
  agents_md: 'AGENTS.md',
  storage: 'storage',
  provider: 'provider',
};

export interface CheckLine {
  section: Section;
  severity: Severity;
  text: string;
}

export interface CheckOptions {
  project: string;
  json: boolean;
  strict: boolean;
  online: boolean;
}

interface AgentEntry {
  stem: string;
  file: string;
  declared_name: string | null;
  invocable: boolean;
  /** The kind of refusal (agent-refusal.ts AgentRefusal), and its words. */
  refusal: AgentRefusal['kind'] | null;
  reason: string | null;
}

/** The report; its JSON form is described by docs/check.schema.json. */
export interface CheckReport {
  version: 1;
  project: string;
  serves: boolean;
  strict: boolean;
  exit_code: 0 | 1;
  confinement: { available: boolean; route: string | null; description: string | null; why: string | null; reason: string | null };
  agents: {
    directory: 'present' | 'absent' | 'unreadable';
    directory_problem: string | null;
    entries_inspected: number;
    retained_bytes: number;
    list: AgentEntry[];
    left_out: { file: string; reason: string }[];
    ambiguous_stems: { stem: string; files: string[] }[];
    limits_hit: string[];
  };
  policy: {
    mode: 'default-permit' | 'configured' | 'deny-all';
    files: string[];
    notices: string[];
    policies: { id: string; label: string; file: string; line: number | null }[];
    warnings: string[];
    deny_reason: string | null;
  };
  agents_md: {
    present: boolean;
    bytes: number | null;
    max_bytes: number;
    guidance: { chars: number; cut: boolean; max_chars: number } | null;
    problem: string | null;
  };
  storage: {
    ownership: { checked: boolean; problem: string | null };
    audit: { ready: boolean; path: string | null; reason: string | null };
    signing_key: { path: string; created: boolean; mode: string; public_key: string } | null;
  };
  provider: {
    configured: boolean;
    kind: string | null;
    base_url: string | null;
    model: string | null;
    key_variable: string | null;
    key_set: boolean;
    proxy: string | null;
    problem: string | null;
    online: OnlineOutcome | null;
  };
  lines: CheckLine[];
}

class Lines {
  readonly all: CheckLine[] = [];
  add(section: Section, severity: Severity, text: string): void {
    this.all.push({ section, severity, text });
  }
}

function confinementSection(snapshot: StartupSnapshot, out: Lines): CheckReport['confinement'] {
  const access = snapshot.projectAccess;
  if (!access.available) {
    out.add('confinement', 'fail', `no confinement route can be proven: ${access.reason}`);
    return { available: false, route: null, description: null, why: null, reason: access.reason };
  }
  out.add('confinement', 'ok', `route ${access.route.name} (${access.route.description}) passed its self-test: ${access.why}`);
  return { available: true, route: access.route.name, description: access.route.description, why: access.why, reason: null };
}

function agentsSection(snapshot: StartupSnapshot, analysis: SourceAnalysis, standings: readonly AgentStanding[], out: Lines): CheckReport['agents'] {
  const dir = snapshot.agentsDirectory;
  const directory = dir.problem !== undefined ? 'unreadable' : dir.present ? 'present' : 'absent';
  if (dir.problem !== undefined) out.add('agents', 'warn', dir.problem);
  else if (!dir.present) out.add('agents', 'warn', 'agents/ does not exist: no agents to list or invoke');

  // The verdict each agent gets is the refusal invoke_agent would give it whatever the call (agent-refusal.ts),
  // as list_agents shows it; the provider and the signing key, the same for every agent, have their own sections.
  const list: AgentEntry[] = standings.map(({ summary, refusal }) => ({
    stem: summary.stem,
    file: summary.file,
    declared_name: summary.verdict.invocable ? summary.verdict.declaredName : null,
    invocable: refusal === undefined,
    refusal: refusal?.kind ?? null,
    reason: refusal === undefined ? null : refusalText(refusal),
  }));
  const invocable = list.filter((a) => a.invocable).length;
  out.add(
    'agents',
    invocable === 0 ? 'warn' : 'ok',
    `${list.length} agent ${list.length === 1 ? 'file' : 'files'}, ${invocable} invocable, ${analysis.skipped.length} left out`,
  );
  for (const agent of list) {
    if (agent.invocable) out.add('agents', 'ok', `${agent.stem} (${agent.file}): invocable, runs as ${agent.declared_name ?? agent.stem}`);
    else out.add('agents', 'warn', `${agent.stem} (${agent.file}): refused: ${agent.reason ?? 'not invocable'}`);
  }
  const stems = new Set(list.map((a) => a.stem));
  for (const skipped of analysis.skipped) {
    const stem = sourceStem(skipped.file.slice(skipped.file.lastIndexOf('/') + 1));
    const unknown = stem !== null && !stems.has(stem) ? ` (invoke_agent answers "unknown agent" for ${stem})` : '';
    out.add('agents', 'warn', `left out ${skipped.file}: ${skipped.reason}${unknown}`);
  }
  for (const limit of snapshot.limitsHit) out.add('agents', 'warn', `limit reached: ${limit}`);

  const byStem = new Map<string, string[]>();
  for (const agent of list) byStem.set(agent.stem, [...(byStem.get(agent.stem) ?? []), agent.file]);
  const ambiguous = [...byStem].filter(([, files]) => files.length > 1).map(([stem, files]) => ({ stem, files: files.sort() }));
  return {
    directory,
    directory_problem: dir.problem ?? null,
    entries_inspected: dir.entriesInspected,
    retained_bytes: dir.retainedBytes,
    list,
    left_out: analysis.skipped.map((s) => ({ file: s.file, reason: s.reason })),
    ambiguous_stems: ambiguous,
    limits_hit: [...snapshot.limitsHit],
  };
}

function policySection(snapshot: StartupSnapshot, out: Lines): CheckReport['policy'] {
  const set = snapshot.policy.set;
  for (const notice of set.notices) {
    const severity: Severity = notice.kind === 'default_permit' ? 'info' : notice.kind === 'rejected' ? 'fail' : 'ok';
    out.add('policy', severity, policyNoticeText(notice));
  }
  for (const warning of set.warnings) out.add('policy', 'warn', warning);
  if (set.mode === 'deny-all') out.add('policy', 'fail', `the policy set denies every response: ${set.denyReason ?? 'the configured policy set is unusable'}`);
  else if (set.mode === 'configured') {
    out.add('policy', 'ok', `${set.policies.length} ${set.policies.length === 1 ? 'policy validates' : 'policies validate'} against the respond schema`);
  }
  return {
    mode: set.mode,
    files: [...snapshot.policy.files],
    notices: set.notices.map(policyNoticeText),
    policies: set.policies.map((p) => ({ id: p.id, label: p.label, file: p.file, line: p.line ?? null })),
    warnings: [...set.warnings],
    deny_reason: set.denyReason ?? null,
  };
}

function agentsMdSection(snapshot: StartupSnapshot, out: Lines): CheckReport['agents_md'] {
  const md = snapshot.agentsMd;
  const base = { max_bytes: AGENTS_MD_MAX_BYTES };
  if (!md.present) {
    if (md.missing) out.add('agents_md', 'info', 'not present (get_agents_md answers that it does not exist; no guidance is sent)');
    else out.add('agents_md', 'warn', `left out: ${md.reason}`);
    return { ...base, present: false, bytes: null, guidance: null, problem: md.missing ? null : md.reason };
  }
  const guidance = md.guidance;
  let text = `${md.bytes} bytes (limit ${AGENTS_MD_MAX_BYTES}); `;
  if (guidance === null) text += 'no generated section, so no guidance is sent to the model';
  else
    text += `generated section ${guidance.originalChars} characters (guidance limit ${AGENTS_MD_GUIDANCE_MAX_CHARS})${guidance.cut ? ', cut to the limit' : ''}`;
  out.add('agents_md', guidance?.cut === true ? 'warn' : 'ok', text);
  return {
    ...base,
    present: true,
    bytes: md.bytes,
    guidance: guidance === null ? null : { chars: guidance.originalChars, cut: guidance.cut, max_chars: AGENTS_MD_GUIDANCE_MAX_CHARS },
    problem: null,
  };
}

function storageSection(project: PinnedDirectory, snapshot: StartupSnapshot, storage: AuditStorageHandle | null, out: Lines): CheckReport['storage'] {
  let ownership: CheckReport['storage']['ownership'] = { checked: false, problem: null };
  if (snapshot.projectAccess.available) {
    const { problem, unread, aclsUnread } = checkProjectDirectories(project);
    ownership = { checked: true, problem: problem ?? null };
    if (problem === undefined)
      out.add('storage', 'ok', `ownership: ${project.displayPath} and every directory above it can be changed only by this user and root`);
    else out.add('storage', 'fail', `ownership: ${problem}`);
    if (unread.length > 0) {
      out.add(
        'storage',
        'warn',
        `ownership: could not read ${unread.join(', ')}, so group members and administrators listed only there (newgrp, sg, gpasswd) were not counted; \`sudo getent gshadow GROUP\` lists them`,
      );
    }
    for (const level of aclsUnread)
      out.add('storage', 'warn', `ownership: ${level}; an ACL the file server applies (an SMB share's, a FUSE file system's) is not seen`);
  }
  const audit = snapshot.audit;
  if (!audit.ready) {
    out.add('storage', 'fail', `audit storage unusable: ${audit.reason}; invoke_agent would refuse every call`);
    return { ownership, audit: { ready: false, path: null, reason: audit.reason }, signing_key: null };
  }
  out.add('storage', 'ok', `audit storage ${audit.governedPath}: private, journals are written here`);
  let signingKey: CheckReport['storage']['signing_key'] = null;
  if (storage !== null) {
    const pinned = storage.pinnedKey;
    const created = pinned.created === true;
    const mode = fileModeText(pinned.file.mode);
    signingKey = { path: pinned.shownPath, created, mode, public_key: audit.publicKeyHex };
    const state = created ? 'created now, as symbi mcp would at its first start' : 'present';
    out.add('storage', 'ok', `signing key ${pinned.shownPath}: ${state}, mode ${mode}, pinned by the server at startup; public key ${audit.publicKeyHex}`);
  }
  return { ownership, audit: { ready: true, path: audit.governedPath, reason: null }, signing_key: signingKey };
}

function providerSection(provider: ProviderSelection, online: OnlineOutcome | null, out: Lines): CheckReport['provider'] {
  if (!provider.ok) {
    out.add('provider', 'fail', `none usable: ${provider.message}; invoke_agent would refuse every call`);
    return {
      configured: false,
      kind: null,
      base_url: null,
      model: null,
      key_variable: null,
      key_set: false,
      proxy: null,
      problem: provider.message,
      online: null,
    };
  }
  const config = provider.config;
  const keySet = config.apiKey !== '';
  // describeProvider says "(no key)" when none is set; the variable a key is read from is worth naming.
  out.add('provider', 'ok', `${describeProvider(config)}${keySet ? `; key set in ${config.keyVariable}` : ''}`);
  if (online !== null) {
    if (online.ok) {
      const providerValue = online.provider_finish_reason === null ? '' : ` (provider value "${online.provider_finish_reason}")`;
      out.add(
        'provider',
        online.finish_reason === 'complete' ? 'ok' : 'warn',
        `online: HTTP ${online.status ?? '2xx'}, finish reason ${online.finish_reason}${providerValue}`,
      );
    } else {
      out.add('provider', 'fail', `online: ${online.error ?? 'the request failed'}`);
    }
  }
  return {
    configured: true,
    kind: config.kind,
    base_url: config.baseUrl,
    model: config.model,
    key_variable: config.keyVariable,
    key_set: keySet,
    proxy: config.proxy === null ? null : shownProxy(config.proxy),
    problem: null,
    online,
  };
}

/** Runs every startup decision of `symbi mcp` on the pinned project and reports it. */
export async function buildCheckReport(
  project: PinnedDirectory,
  options: Pick<CheckOptions, 'strict' | 'online'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CheckReport> {
  const { snapshot, auditStorage } = takeStartupSnapshot(project);
  // A line the analysis thread printed goes to standard error, like the server's.
  const analysisPool = new DslAnalysisPool({ log: createOperatorLog('text') });
  let analysis: SourceAnalysis;
  try {
    analysis = await analyseSources(snapshot, analysisPool);
  } finally {
    await analysisPool.close();
  }
  const provider = providerFromEnvironment(env);
  const online = options.online && provider.ok ? await probeProvider(provider.config) : null;
  const standings = await agentStandings({ projectAccess: snapshot.projectAccess, policySet: snapshot.policy.set }, analysis.agents);
  const out = new Lines();
  const report: Omit<CheckReport, 'serves' | 'exit_code' | 'lines'> = {
    version: 1,
    project: snapshot.project.path,
    strict: options.strict,
    confinement: confinementSection(snapshot, out),
    agents: agentsSection(snapshot, analysis, standings, out),
    policy: policySection(snapshot, out),
    agents_md: agentsMdSection(snapshot, out),
    storage: storageSection(project, snapshot, auditStorage, out),
    provider: providerSection(provider, online, out),
  };
  if (auditStorage !== null) {
    // The check signs nothing: the key material it loaded goes at once.
    auditStorage.pinnedKey.seed.fill(0);
    closeAuditStorage(auditStorage);
  }
  const serves = !out.all.some((l) => l.severity === 'fail');
  const failing = !serves || (options.strict && out.all.some((l) => l.severity === 'warn'));
  return { ...report, serves, exit_code: failing ? 1 : 0, lines: out.all };
}

const MARKS: Record<Severity, string> = { ok: 'ok  ', info: 'info', warn: 'warn', fail: 'FAIL' };

/** The plain-text report: one line per finding, grouped by section, every value escaped onto its line. */
export function formatCheckReport(report: CheckReport): string {
  const lines = [`symbi check: ${escapeToOneLine(report.project)}`];
  for (const section of Object.keys(SECTION_TITLES) as Section[]) {
    const own = report.lines.filter((l) => l.section === section);
    if (own.length === 0) continue;
    lines.push(SECTION_TITLES[section]);
    for (const line of own) lines.push(`  ${MARKS[line.severity]}  ${escapeToOneLine(line.text)}`);
  }
  const warnings = report.lines.filter((l) => l.severity === 'warn').length;
  const failures = report.lines.filter((l) => l.severity === 'fail').length;
  const counts = `${failures} ${failures === 1 ? 'failure' : 'failures'}, ${warnings} ${warnings === 1 ? 'finding' : 'findings'}`;
  const verdict = report.serves ? 'symbi mcp would start and serve as configured' : 'symbi mcp would not serve as configured';
  const strictNote = report.serves && report.exit_code === 1 ? ' (--strict: a finding fails the check)' : '';
  lines.push(`result: ${verdict}; ${counts}${strictNote}`);
  return `${lines.join('\n')}\n`;
}

export async function runCheck(options: CheckOptions): Promise<void> {
  const project = pinProjectOption(options.project, 'check');
  const report = await buildCheckReport(project, options);
  process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatCheckReport(report));
  process.exitCode = report.exit_code;
}

/** Adds `symbi check` to the command line. */
export function registerCheckCommand(program: Command): void {
  program
    .command('check')
    .description('Report what symbi mcp decides at startup for the project; exit 0 when it would serve as configured')
    .addOption(new Option('--project <dir>', 'project directory (default: the current directory)').default('.'))
    .option('--json', 'print the report as JSON (docs/check.schema.json)')
    .option('--strict', 'fail on any finding, such as a refused agent, not only on what stops the server serving')
    .option('--online', 'send one real request to the configured provider and report its outcome (never its text)')
    .exitOverride((err: CommanderError) => {
      process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
    })
    .action(async (raw: { project: string; json?: boolean; strict?: boolean; online?: boolean }) => {
      await runCheck({ project: raw.project, json: raw.json === true, strict: raw.strict === true, online: raw.online === true });
    });
}

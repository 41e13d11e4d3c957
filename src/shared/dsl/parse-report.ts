import type { z } from 'zod';
import { DSL_FILE_MAX_BYTES, DSL_MAX_ERRORS } from '../limits.js';
import type { AgentDecl, ChannelDecl, DslFile, Expr, MemoryDecl, PolicyDecl, ScheduleDecl, WebhookDecl, WithBlock } from './ast.js';
import { humantimeSeconds, timeoutSeconds, trimQuotes } from './durations.js';
import { defineKey, exprToJson, typeToText, type JsonValue } from './json-values.js';
import type {
  parseReportSchema,
  reportAgentSchema,
  reportChannelSchema,
  reportMemorySchema,
  reportPolicySchema,
  reportScheduleSchema,
  reportWebhookSchema,
  reportWithBlockSchema,
} from './parse-report-schema.js';
import { parseDsl } from './parser.js';
import { shownName } from './shown-name.js';
import { stringLiteralsIn } from './string-literals.js';
import type { SyntaxDiagnostic } from './tokens.js';

// The `parse_dsl` report: a JSON-able summary of a DSL file, shared by the
// parse_dsl tool, list_agents and `symbi dsl -f`. Schedules, channels, memory
// and webhook blocks and `with` attributes are read with the rules of
// Symbiont's extraction code (crates/dsl/src/lib.rs in ThirdKeyAI/Symbiont:
// extract_schedule_definitions, extract_channel_definitions,
// extract_memory_definitions, extract_webhook_definitions,
// extract_with_blocks): the same defaults, the same conversions and the same
// errors, which are listed in `extraction_errors`.

// The report's shape is declared once, as the zod schemas parse_dsl advertises
// as its outputSchema; only their types are imported, so `symbi dsl` loads no zod.
export type ParseReport = z.infer<typeof parseReportSchema>;
export type ReportPolicy = z.infer<typeof reportPolicySchema>;
export type ReportWithBlock = z.infer<typeof reportWithBlockSchema>;
export type ReportAgent = z.infer<typeof reportAgentSchema>;
export type ReportSchedule = z.infer<typeof reportScheduleSchema>;
export type ReportChannel = z.infer<typeof reportChannelSchema>;
export type ReportMemory = z.infer<typeof reportMemorySchema>;
export type ReportWebhook = z.infer<typeof reportWebhookSchema>;

const SANDBOX_TIERS: { [name: string]: string } = {
  docker: 'docker',
  tier1: 'docker',
  gvisor: 'gvisor',
  tier2: 'gvisor',
  firecracker: 'firecracker',
  tier3: 'firecracker',
  e2b: 'e2b',
};
const WEBHOOK_PROVIDERS = ['github', 'stripe', 'slack'] as const;
const DEFAULT_MEMORY_PATH = 'data/agents';
const DEFAULT_RETENTION_SECONDS = 90 * 86_400;
const DEFAULT_SEARCH_WEIGHTS = { vector_weight: 0.7, keyword_weight: 0.3 };
/**
 * What Rust's `str::parse::<f64>` accepts, short of `inf` and `NaN`. Each
 * digit can be matched one way only, so a long run of digits that fails at its
 * end is rejected in linear time (`\d+\.?\d*` would try every split of it).
 */
const FLOAT_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

export function parseDslReport(text: string, source: string): ParseReport {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > DSL_FILE_MAX_BYTES) return errorReport(source, `DSL text is ${bytes} bytes; the limit is ${DSL_FILE_MAX_BYTES} bytes (1 MiB)`);
  const { file, errors } = parseDsl(text);
  return buildReport(file, errors, text, source);
}

/** Decodes strictly first: invalid UTF-8 is refused before any parsing. */
export function parseDslBytes(bytes: Uint8Array, source: string): ParseReport {
  if (bytes.byteLength > DSL_FILE_MAX_BYTES) {
    return errorReport(source, `DSL file is ${bytes.byteLength} bytes; the limit is ${DSL_FILE_MAX_BYTES} bytes (1 MiB)`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return errorReport(source, 'the file is not valid UTF-8; DSL files must be UTF-8 text');
  }
  return parseDslReport(text, source);
}

function errorReport(source: string, message: string): ParseReport {
  const report = emptyReport(source);
  report.has_errors = true;
  report.errors.push({ line: 1, column: 1, message });
  return report;
}

/** A report with no items and no errors yet; the field order is the report's JSON order. */
function emptyReport(source: string): ParseReport {
  return {
    source,
    has_errors: false,
    errors: [],
    metadata: {},
    agents: [],
    policies: [],
    with_blocks: [],
    schedules: [],
    channels: [],
    memories: [],
    webhooks: [],
    extraction_errors: [],
  };
}

export function buildReport(file: DslFile, errors: SyntaxDiagnostic[], src: string, source: string): ParseReport {
  const report = emptyReport(source);
  report.has_errors = errors.length > 0;
  report.errors = errors.map((e) => ({ line: e.line, column: e.column, message: e.message }));
  // Capped like syntax errors: one entry past the cap says that the list stops there.
  const problem = (at: { line: number; column: number }, message: string): void => {
    const found = report.extraction_errors.length;
    if (found > DSL_MAX_ERRORS) return;
    const capped = found === DSL_MAX_ERRORS;
    report.extraction_errors.push({
      line: at.line,
      column: at.column,
      message: capped ? `too many extraction errors; stopped after ${DSL_MAX_ERRORS}` : message,
    });
  };
  for (const item of file.items) {
    switch (item.kind) {
      case 'metadata':
        for (const pair of item.pairs) defineKey(report.metadata, pair.key, exprToJson(pair.value, src));
        break;
      case 'policy':
        report.policies.push(reportPolicy(item, 'file', src));
        break;
      case 'agent':
        report.agents.push(reportAgent(item, report, src, problem));
        break;
      case 'schedule':
        report.schedules.push(reportSchedule(item, src, problem));
        break;
      case 'channel':
        report.channels.push(reportChannel(item, src, problem));
        for (const p of item.policies) report.policies.push(reportPolicy(p, `channel ${item.name}`, src));
        break;
      case 'memory':
        report.memories.push(reportMemory(item, src, problem));
        break;
      case 'webhook':
        report.webhooks.push(reportWebhook(item, src, problem));
        break;
      default:
        break;
    }
  }
  return report;
}

type Problem = (at: { line: number; column: number }, message: string) => void;

function reportPolicy(policy: PolicyDecl, scope: string, src: string): ReportPolicy {
  return {
    name: policy.name,
    line: policy.line,
    scope,
    rules: policy.rules.map((r) => ({
      kind: r.kind,
      line: r.line,
      selector: exprToJson(r.selector, src),
      condition: r.condition ? src.slice(r.condition.start, r.condition.end) : null,
    })),
  };
}

function withAttributes(block: WithBlock, src: string): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const attr of block.attributes) defineKey(out, attr.key, exprToJson(attr.value, src));
  return out;
}

function reportAgent(agent: AgentDecl, report: ParseReport, src: string, problem: Problem): ReportAgent {
  const out: ReportAgent = {
    name: agent.name,
    parameters: (agent.params ?? []).map((p) => ({ name: p.name, type: typeToText(p.type) })),
    return_type: agent.returnType ? typeToText(agent.returnType) : null,
    capabilities: [],
    policies: [],
    with: [],
    line: agent.line,
  };
  for (const member of agent.members) {
    switch (member.kind) {
      case 'capabilities':
        for (const capability of stringLiteralsIn(member.value)) out.capabilities.push(capability);
        break;
      case 'policy':
        out.policies.push(member.name);
        report.policies.push(reportPolicy(member, `agent ${agent.name}`, src));
        break;
      case 'with':
        out.with.push(withAttributes(member, src));
        report.with_blocks.push(reportWithBlock(member, agent.name, src, problem));
        break;
      default:
        break;
    }
  }
  return out;
}

function reportWithBlock(block: WithBlock, agent: string, src: string, problem: Problem): ReportWithBlock {
  const out: ReportWithBlock = {
    agent,
    sandbox_tier: null,
    timeout: null,
    attributes: withAttributes(block, src),
    statements: block.body.statements.length + (block.body.tail ? 1 : 0),
    line: block.line,
  };
  for (const attr of block.attributes) {
    const text = sourceText(attr.value, src);
    if (attr.key === 'sandbox') {
      const tier = SANDBOX_TIERS[trimQuotes(text).toLowerCase()];
      if (tier) out.sandbox_tier = tier;
      else problem(attr, `Invalid sandbox tier: ${shownName(text)}. Valid options are: docker (tier1), gvisor (tier2), firecracker (tier3), e2b`);
    } else if (attr.key === 'timeout') {
      const seconds = timeoutSeconds(text);
      if (seconds !== null) out.timeout = seconds;
      else problem(attr, `Invalid timeout value: ${shownName(text)}; write a duration such as \`30s\`, \`5m\` or \`30.seconds\`, or a whole number of seconds`);
    }
  }
  return out;
}

function reportSchedule(item: ScheduleDecl, src: string, problem: Problem): ReportSchedule {
  const out: ReportSchedule = {
    name: item.name,
    cron: null,
    at: null,
    timezone: 'UTC',
    agent: null,
    policy: null,
    audit: null,
    one_shot: false,
    deliver: null,
    line: item.line,
  };
  for (const p of item.properties) {
    const value = literalText(p.value, src);
    switch (p.key) {
      case 'cron':
      case 'at':
      case 'agent':
      case 'policy':
      case 'audit':
      case 'deliver':
        out[p.key] = value;
        break;
      case 'timezone':
        out.timezone = value;
        break;
      case 'one_shot':
        out.one_shot = value === 'true';
        break;
      default:
        break; // Symbiont ignores unknown keys, for forward compatibility.
    }
  }
  if (out.cron === null && out.at === null) problem(item, `schedule '${shownName(item.name)}': must specify either 'cron' or 'at'`);
  if (out.cron !== null && out.at !== null) problem(item, `schedule '${shownName(item.name)}': cannot specify both 'cron' and 'at'`);
  return out;
}

function reportChannel(item: ChannelDecl, src: string, problem: Problem): ReportChannel {
  const out: ReportChannel = {
    name: item.name,
    platform: null,
    workspace: null,
    channels: [],
    default_agent: null,
    dlp_profile: null,
    audit_level: null,
    default_deny: false,
    data_classification: item.dataClassification.map((r) => ({ category: r.category, action: r.action })),
    line: item.line,
  };
  for (const p of item.properties) {
    if (p.value.kind === 'array') {
      // Only `channels` takes an array; Symbiont ignores arrays under other keys.
      if (p.key === 'channels') out.channels = p.value.items.map((e) => literalText(e, src));
      continue;
    }
    const value = literalText(p.value, src);
    switch (p.key) {
      case 'platform':
      case 'workspace':
      case 'default_agent':
      case 'dlp_profile':
      case 'audit_level':
        out[p.key] = value;
        break;
      case 'default_deny':
        out.default_deny = value === 'true';
        break;
      default:
        break;
    }
  }
  if (out.platform === null) problem(item, `channel '${shownName(item.name)}': must specify 'platform'`);
  return out;
}

function reportMemory(item: MemoryDecl, src: string, problem: Problem): ReportMemory {
  const out: ReportMemory = {
    name: item.name,
    store: 'markdown',
    path: DEFAULT_MEMORY_PATH,
    retention_seconds: DEFAULT_RETENTION_SECONDS,
    search: null,
    line: item.line,
  };
  for (const p of item.properties) {
    const value = literalText(p.value, src);
    if (p.key === 'store') {
      if (value.toLowerCase() !== 'markdown')
        problem(p, `memory '${shownName(item.name)}': unknown store type '${shownName(value)}'; the store is \`markdown\``);
    } else if (p.key === 'path') {
      out.path = value;
    } else if (p.key === 'retention') {
      const seconds = humantimeSeconds(value);
      if (seconds === null)
        problem(p, `memory '${shownName(item.name)}': invalid retention '${shownName(value)}'; write a duration such as \`90d\` or \`12w\``);
      else out.retention_seconds = seconds;
    }
  }
  if (item.search) {
    const search = { ...DEFAULT_SEARCH_WEIGHTS };
    for (const p of item.search) {
      if (p.key !== 'vector_weight' && p.key !== 'keyword_weight') continue;
      // Symbiont parses the weight's source text as it stands: a quoted number is refused.
      const text = sourceText(p.value, src);
      if (FLOAT_TEXT.test(text)) search[p.key] = Number(text);
      else problem(p, `memory: invalid ${p.key} '${shownName(text)}'; write a number such as 0.7`);
    }
    out.search = search;
  }
  return out;
}

function reportWebhook(item: WebhookDecl, src: string, problem: Problem): ReportWebhook {
  const out: ReportWebhook = { name: item.name, path: '', provider: 'custom', secret: '', agent: null, filter: null, line: item.line };
  let hasPath = false;
  for (const p of item.properties) {
    const value = literalText(p.value, src);
    if (p.key === 'path') {
      out.path = value;
      hasPath = true;
    } else if (p.key === 'provider') {
      out.provider = WEBHOOK_PROVIDERS.find((name) => name === value.toLowerCase()) ?? 'custom';
    } else if (p.key === 'secret') {
      out.secret = value;
    } else if (p.key === 'agent') {
      out.agent = value;
    }
  }
  if (item.filter) {
    const filter: NonNullable<ReportWebhook['filter']> = { json_path: '', equals: null, contains: null };
    for (const p of item.filter) {
      const value = literalText(p.value, src);
      if (p.key === 'json_path') filter.json_path = value;
      else if (p.key === 'equals' || p.key === 'contains') filter[p.key] = value;
    }
    out.filter = filter;
  }
  if (!hasPath) problem(item, `webhook '${shownName(item.name)}': must specify 'path'`);
  return out;
}

function sourceText(expr: Expr, src: string): string {
  return src.slice(expr.start, expr.end);
}

/** A literal as Symbiont extracts it: a string's text, or any other value's source text (`true`, `30s`, `slack`). */
function literalText(expr: Expr, src: string): string {
  return expr.kind === 'string' ? expr.value : sourceText(expr, src);
}

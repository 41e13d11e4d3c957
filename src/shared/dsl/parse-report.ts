import { DSL_FILE_MAX_BYTES } from '../limits.js';
import type { AgentDecl, DslFile, Item, NamedBlockDecl, PairBlock, PolicyDecl, WithBlock } from './ast.js';
import { defineKey, exprToJson, typeToText, type JsonValue } from './json-values.js';
import { parseDsl, type ItemSink } from './parser.js';
import type { SyntaxDiagnostic } from './tokens.js';

// The `parse_dsl` report: a JSON-able summary of a DSL file, shared by the
// parse_dsl tool, list_agents and `symbi dsl -f`.

export type { JsonValue } from './json-values.js';

export interface ReportPolicy {
  name: string;
  line: number;
  /** `file`, `agent <name>` or `channel <name>`. */
  scope: string;
  rules: { kind: string; line: number; selector: JsonValue; condition: string | null }[];
}

export interface ReportWithBlock {
  agent: string;
  sandbox_tier: JsonValue;
  timeout: JsonValue;
  attributes: { [key: string]: JsonValue };
  statements: number;
  line: number;
}

export interface ReportAgent {
  name: string;
  parameters: { name: string; type: string | null }[];
  return_type: string | null;
  capabilities: JsonValue[];
  policies: string[];
  with: { [key: string]: JsonValue }[];
  line: number;
}

export interface ReportSchedule {
  name: string;
  cron: JsonValue;
  at: JsonValue;
  timezone: JsonValue;
  agent: JsonValue;
  policy: JsonValue;
  one_shot: JsonValue;
  deliver: JsonValue;
  line: number;
}

export interface ReportChannel {
  name: string;
  platform: JsonValue;
  workspace: JsonValue;
  channels: JsonValue;
  default_agent: JsonValue;
  line: number;
}

export interface ParseReport {
  source: string;
  has_errors: boolean;
  errors: SyntaxDiagnostic[];
  metadata: { [key: string]: JsonValue };
  agents: ReportAgent[];
  policies: ReportPolicy[];
  with_blocks: ReportWithBlock[];
  schedules: ReportSchedule[];
  channels: ReportChannel[];
}

export function parseDslReport(text: string, source: string): ParseReport {
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so short texts skip the byte count.
  if (text.length * 3 > DSL_FILE_MAX_BYTES) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > DSL_FILE_MAX_BYTES) {
      return errorReport(source, `DSL text is ${bytes} bytes; the limit is ${DSL_FILE_MAX_BYTES} bytes (1 MiB)`);
    }
  }
  // Items are summarised as the parser finishes each one, so their syntax
  // trees die young instead of surviving (and being copied by the collector)
  // until the whole file is parsed. The report quotes policy conditions as
  // source text, so their trees are not built at all.
  const builder = new ReportBuilder(emptyReport(source), text);
  const { errors } = parseDsl(text, { retainBodies: false, itemSink: builder, conditionTrees: false });
  return builder.finish(errors);
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
  return {
    source,
    has_errors: true,
    errors: [{ line: 1, column: 1, message }],
    metadata: {},
    agents: [],
    policies: [],
    with_blocks: [],
    schedules: [],
    channels: [],
  };
}

export function buildReport(file: DslFile, errors: SyntaxDiagnostic[], src: string, source: string): ParseReport {
  const builder = new ReportBuilder(emptyReport(source), src);
  for (const item of file.items) builder.add(item);
  return builder.finish(errors);
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
  };
}

/** Adds items to a report in file order (an ItemSink for parseDsl). */
class ReportBuilder implements ItemSink {
  constructor(
    private readonly report: ParseReport,
    private readonly src: string,
  ) {}

  finish(errors: SyntaxDiagnostic[]): ParseReport {
    const report = this.report;
    report.has_errors = errors.length > 0;
    const copies: SyntaxDiagnostic[] = [];
    for (const e of errors) copies.push({ line: e.line, column: e.column, message: e.message });
    report.errors = copies;
    return report;
  }

  add(item: Item): void {
    const report = this.report;
    const src = this.src;
    switch (item.kind) {
      case 'metadata':
        for (const pair of item.block.pairs) defineKey(report.metadata, pair.key, exprToJson(pair.value, src));
        break;
      case 'policy':
        report.policies.push(reportPolicy(item, 'file', src));
        break;
      case 'agent':
        report.agents.push(reportAgent(item, report, src));
        break;
      case 'schedule':
        report.schedules.push(reportSchedule(item, src));
        break;
      case 'channel':
        report.channels.push(reportChannel(item, src));
        for (const p of item.block.policies) report.policies.push(reportPolicy(p, `channel ${item.name}`, src));
        break;
      default:
        break;
    }
  }
}

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

export function withAttributes(block: WithBlock, src: string): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const attr of block.attributes) defineKey(out, attr.name, exprToJson(attr.value, src));
  return out;
}

function reportAgent(agent: AgentDecl, report: ParseReport, src: string): ReportAgent {
  const out: ReportAgent = {
    name: agent.name,
    parameters: (agent.params ?? []).map((p) => ({ name: p.name, type: p.type ? typeToText(p.type) : null })),
    return_type: agent.returnType ? typeToText(agent.returnType) : null,
    capabilities: [],
    policies: [],
    with: [],
    line: agent.line,
  };
  for (const member of agent.members) {
    switch (member.kind) {
      case 'capabilities': {
        const value = exprToJson(member.value, src);
        out.capabilities.push(...(Array.isArray(value) ? value : [value]));
        break;
      }
      case 'policy':
        out.policies.push(member.name);
        report.policies.push(reportPolicy(member, `agent ${agent.name}`, src));
        break;
      case 'with': {
        const attributes = withAttributes(member, src);
        out.with.push(attributes);
        report.with_blocks.push({
          agent: agent.name,
          sandbox_tier: attributes['sandbox'] ?? attributes['sandbox_tier'] ?? null,
          timeout: attributes['timeout'] ?? null,
          attributes,
          statements: member.body.count,
          line: member.line,
        });
        break;
      }
      default:
        break;
    }
  }
  return out;
}

function pairValue(block: PairBlock, key: string, src: string): JsonValue {
  let value: JsonValue = null;
  for (const pair of block.pairs) if (pair.key === key) value = exprToJson(pair.value, src);
  return value;
}

function reportSchedule(item: NamedBlockDecl, src: string): ReportSchedule {
  const b = item.block;
  return {
    name: item.name,
    cron: pairValue(b, 'cron', src),
    at: pairValue(b, 'at', src),
    timezone: pairValue(b, 'timezone', src),
    agent: pairValue(b, 'agent', src),
    policy: pairValue(b, 'policy', src),
    one_shot: pairValue(b, 'one_shot', src),
    deliver: pairValue(b, 'deliver', src),
    line: item.line,
  };
}

function reportChannel(item: NamedBlockDecl, src: string): ReportChannel {
  const b = item.block;
  return {
    name: item.name,
    platform: pairValue(b, 'platform', src),
    workspace: pairValue(b, 'workspace', src),
    channels: pairValue(b, 'channels', src),
    default_agent: pairValue(b, 'default_agent', src),
    line: item.line,
  };
}

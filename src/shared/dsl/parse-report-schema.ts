import { z } from 'zod';

// The shape of the parse report (parse-report.ts builds it), declared once:
// parse-report.ts infers the report's TypeScript types from these schemas, and the
// parse_dsl tool advertises the same schema as its outputSchema, so what a
// client is told to expect and what the code can build cannot drift apart.
// The field meanings are described in docs/dsl.md, "The parse report".

const line = z.number().int().min(1);

/** One place in the text and what is wrong there. */
const diagnosticSchema = z.object({ line, column: z.number().int().min(1), message: z.string() });

const jsonObject = z.record(z.string(), z.json());

/** A `policy` block with its scope and rules. */
export const reportPolicySchema = z.object({
  name: z.string(),
  line,
  scope: z.string().describe('`file`, `agent <name>` or `channel <name>`'),
  rules: z.array(z.object({ kind: z.string(), line, selector: z.json(), condition: z.string().nullable() })),
});

/** A `with` block of an agent: its sandbox tier, timeout and attributes. */
export const reportWithBlockSchema = z.object({
  agent: z.string(),
  sandbox_tier: z.string().nullable().describe('`docker`, `gvisor`, `firecracker` or `e2b`; null when absent or unknown'),
  timeout: z.number().int().min(0).nullable().describe('Whole seconds; null when absent or invalid'),
  attributes: jsonObject,
  statements: z.number().int().min(0),
  line,
});

/** An `agent` declaration as Symbiont extracts it. */
export const reportAgentSchema = z.object({
  name: z.string(),
  parameters: z.array(z.object({ name: z.string(), type: z.string() })),
  return_type: z.string().nullable(),
  capabilities: z.array(z.string()),
  policies: z.array(z.string()),
  with: z.array(jsonObject),
  line,
});

/** A `schedule` block with Symbiont's defaults applied. */
export const reportScheduleSchema = z.object({
  name: z.string(),
  cron: z.string().nullable(),
  at: z.string().nullable(),
  timezone: z.string(),
  agent: z.string().nullable(),
  policy: z.string().nullable(),
  audit: z.string().nullable(),
  one_shot: z.boolean(),
  deliver: z.string().nullable(),
  line,
});

/** A `channel` block with Symbiont's defaults applied. */
export const reportChannelSchema = z.object({
  name: z.string(),
  platform: z.string().nullable(),
  workspace: z.string().nullable(),
  channels: z.array(z.string()),
  default_agent: z.string().nullable(),
  dlp_profile: z.string().nullable(),
  audit_level: z.string().nullable(),
  default_deny: z.boolean(),
  data_classification: z.array(z.object({ category: z.string(), action: z.string() })),
  line,
});

/** A `memory` block with Symbiont's defaults applied. */
export const reportMemorySchema = z.object({
  name: z.string(),
  store: z.literal('markdown'),
  path: z.string(),
  retention_seconds: z.number().int().min(0),
  search: z.object({ vector_weight: z.number(), keyword_weight: z.number() }).nullable(),
  line,
});

/** A `webhook` block with Symbiont's defaults applied. */
export const reportWebhookSchema = z.object({
  name: z.string(),
  path: z.string(),
  provider: z.enum(['github', 'stripe', 'slack', 'custom']),
  secret: z.string(),
  agent: z.string().nullable(),
  filter: z.object({ json_path: z.string(), equals: z.string().nullable(), contains: z.string().nullable() }).nullable(),
  line,
});

/** The whole report, as `parse_dsl` and `symbi dsl -f` return it. */
export const parseReportSchema = z.object({
  source: z.string().describe('The project-relative path read, or <inline>'),
  has_errors: z.boolean().describe('Whether the text breaks the grammar; `errors` lists where'),
  errors: z.array(diagnosticSchema),
  metadata: jsonObject,
  agents: z.array(reportAgentSchema),
  policies: z.array(reportPolicySchema),
  with_blocks: z.array(reportWithBlockSchema),
  schedules: z.array(reportScheduleSchema),
  channels: z.array(reportChannelSchema),
  memories: z.array(reportMemorySchema),
  webhooks: z.array(reportWebhookSchema),
  extraction_errors: z.array(diagnosticSchema).describe("What Symbiont's extraction refuses in a file that parses"),
});

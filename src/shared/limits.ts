// Every bound named by the specification, in one place; docs/limits.md lists them for users.
export const KiB = 1024;
export const MiB = 1024 * 1024;

export const PROMPT_MAX_BYTES = 64 * KiB;
export const SYSTEM_PROMPT_MAX_BYTES = 64 * KiB;
export const MAX_OUTPUT_TOKENS = 4096;
export const RESPONSE_DEADLINE_MS = 120_000;
export const TYPED_REQUEST_MAX_BYTES = 1 * MiB;
export const TYPED_RESPONSE_MAX_BYTES = 4 * MiB;
export const DSL_FILE_MAX_BYTES = 1 * MiB;
export const AGENTS_MD_MAX_BYTES = 64 * KiB;
export const AGENTS_MD_GUIDANCE_MAX_CHARS = 2000;
export const DISCOVERY_MAX_ENTRIES = 1024;
export const DISCOVERY_MAX_RETAINED_BYTES = 16 * MiB;
export const SCHEMA_MAX_BYTES = 1 * MiB;
export const SCHEMA_KEY_URL_MAX_BYTES = 8 * KiB;
export const SCHEMA_KEY_BODY_MAX_BYTES = 64 * KiB;
export const SCHEMA_KEY_FETCH_TIMEOUT_MS = 10_000;
export const JOURNAL_LINE_MAX_BYTES = 1 * MiB;
export const JOURNAL_FILE_MAX_BYTES = 64 * MiB;
/** An answer's text, as JSON, at most: the journal records it in one line (ReasoningComplete), with room for the record's other fields. */
export const ANSWER_IN_JOURNAL_MAX_BYTES = JOURNAL_LINE_MAX_BYTES - 64 * KiB;
/** Tracked operations (effect rows) one inspection classifies; Symbiont's docs/crash-inspection.md names the same bound. */
export const JOURNAL_TRACKED_OPERATIONS_MAX = 32_768;
export const POLICY_FILE_MAX_BYTES = 1 * MiB;
export const SHUTDOWN_GRACE_MS_DEFAULT = 10_000;

// Inline DSL policy subset accepted by the conversational check.
export const INLINE_POLICY_MAX_RULES = 128;
export const INLINE_POLICY_MAX_CONDITION_TOKENS = 256;
export const INLINE_POLICY_MAX_NESTING = 24;

// Parser guard: deeper nesting is reported as an error instead of recursing further.
export const DSL_MAX_NESTING = 256;

// Entries inspected in each policy directory; past it the policy set is unreadable (deny-all).
export const POLICY_DISCOVERY_MAX_ENTRIES = 1024;
// Folders below policies/ recorded by identity at startup (reserved-directories.ts); more and the server does not start.
export const RESERVED_POLICY_DIRECTORIES_MAX = 256;
// Longest agent name accepted by the agent tools (a filename stem; longer names cannot exist).
export const AGENT_NAME_MAX_BYTES = 255;
// Longest declared agent name (`agent NAME { ... }`); a longer one is refused at startup, since the name
// reaches every journal, policy request and `audit list` row.
export const AGENT_DECLARED_NAME_MAX_BYTES = 255;
// Longest line read from standard input; a longer line is discarded without buffering it.
export const STDIN_LINE_MAX_BYTES = 8 * MiB;
// Answers waiting unread on standard output; above it the server reads no more input until the client reads.
export const STDOUT_BACKLOG_MAX_BYTES = 256 * KiB;
// invoke_agent calls in progress at once (running or queued for a worker); past it a call is refused
// at once. `symbi mcp --max-invocations` changes it. The worker heap limit (invocation-pool.ts) is
// sized for this many runs at the specification's largest requests.
export const INVOCATIONS_MAX_DEFAULT = 512;
// Cancelled invoke_agent calls whose runs are still being finished (their terminal record not yet
// durable). A cancelled call is over for the client, so these do not count against
// --max-invocations; they are bounded by this instead, so memory stays bounded. Each usually
// finishes within milliseconds; past it a new call is refused at once.
export const CANCELLED_INVOCATIONS_FINISHING_MAX = 1024;

// The SchemaPin trust-on-first-use store (.symbiont/schemapin/pins.json); larger is refused as damaged.
export const SCHEMAPIN_PINS_MAX_BYTES = 1 * MiB;

// Syntax errors reported per DSL file; past it the parser stops and says so.
// The extraction errors of one report are capped at the same count.
export const DSL_MAX_ERRORS = 100;

// Longest project-relative path a file tool accepts, in UTF-8 bytes (Linux PATH_MAX); longer is refused before any open.
export const PROJECT_PATH_MAX_BYTES = 4096;

// Longest name or source snippet quoted in a DSL diagnostic; longer ones are cut and marked with `…`.
export const DSL_MESSAGE_NAME_MAX_CHARS = 64;
// Time one DSL text may take to analyse (lex, parse, report) in the analysis worker; past it the
// text gets a one-line refusal and the worker thread is ended and replaced.
export const DSL_ANALYSIS_BUDGET_MS = 5_000;
// Callers' parse_dsl texts waiting for the analysis thread at once; past it parse_dsl answers at once
// that it is busy (the waiting texts are held in memory, so the queue is bounded like each text). The
// server's own analyses (startup, invoke_agent's selection) go ahead of these and are not counted.
export const DSL_ANALYSIS_QUEUE_MAX = 8;
// Largest parse report parse_dsl returns, as its JSON text; a larger one becomes a one-line error.
export const DSL_REPORT_MAX_BYTES = 4 * MiB;

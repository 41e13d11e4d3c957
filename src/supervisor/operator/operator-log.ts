import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import type { Logger, pino as PinoFactory } from 'pino';
import { escapeToOneLine } from '../../shared/text/one-line-text.js';
import { REDACTED_KEY_MIN_CHARS, redactKeys, redactSecrets, shortKeysLeftAsText } from '../../shared/secrets/key-redaction.js';
import { lineSink, takeOverStream } from '../../shared/text/stream-lines.js';
import type { LogEvent } from './log-events.js';

// Everything the server says to an operator goes to standard error, and only
// through here: standard output is the MCP channel and must carry JSON-RPC
// messages only. Each line is one named event (log-events.ts lists them and
// docs/running.md documents their fields). Callers pass short messages and plain fields; never prompts
// or responses. What reaches this process's stderr stream anyway (a library's
// console call, a worker thread's standard error, which Node pipes into it) is
// taken in by captureStandardError and said as a line of its own. Every byte
// written passes the key redaction (src/shared/secrets/key-redaction.ts) on
// the way out, however the key was split, escaped or cased.

export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

export type LogLevel = 'info' | 'warn' | 'error';

/** One event's fields; `event` names it (log-events.ts). */
export type LogFields = { event: LogEvent } & Record<string, unknown>;

export interface OperatorLog {
  readonly format: LogFormat;
  info(message: string, fields: LogFields): void;
  warn(message: string, fields: LogFields): void;
  error(message: string, fields: LogFields): void;
  /** The same, at a level chosen at run time. */
  write(level: LogLevel, message: string, fields: LogFields): void;
}

function formatFieldValue(value: unknown): string {
  // JSON.stringify leaves C1 and bidirectional controls as they are; escapeToOneLine does not.
  if (typeof value === 'string') return escapeToOneLine(/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value));
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    // oxlint-disable-next-line typescript/no-base-to-string -- JSON.stringify gives undefined only for undefined, a function or a symbol, which String spells
    return escapeToOneLine(JSON.stringify(value) ?? String(value));
  } catch {
    return '[unserialisable]';
  }
}

/** The one write to descriptor 2: each whole line, redacted once more as it will be read. */
function stderrWriter(secrets: readonly string[]): (line: string) => void {
  return (line) => {
    try {
      fs.writeSync(2, redactSecrets(line, secrets));
    } catch {
      // A closed stderr must never take the server down.
    }
  };
}

/**
 * The message and each string field redacted on its own, with its edges looked at: a key a line
 * break split over two captured lines shows part of itself at the edge of each.
 */
function redacted(message: string, fields: LogFields, secrets: readonly string[]): { message: string; fields: LogFields } {
  const clean = (value: unknown): unknown => (typeof value === 'string' ? redactSecrets(value, secrets, { atEdges: true }) : value);
  const cleaned: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) cleaned[key] = Array.isArray(value) ? value.map(clean) : clean(value);
  return { message: redactSecrets(message, secrets, { atEdges: true }), fields: { ...cleaned, event: fields.event } };
}

function textLog(write: (line: string) => void, secrets: readonly string[]): OperatorLog {
  const log = (level: LogLevel, rawMessage: string, rawFields: LogFields): void => {
    const { message, fields } = redacted(rawMessage, rawFields, secrets);
    // Startup summary lines already say everything in the message; their fields are for JSON readers.
    const summaryLine = fields.event.startsWith('startup.');
    const extra = summaryLine
      ? ''
      : Object.entries(fields)
          .filter(([k, v]) => k !== 'event' && v !== undefined)
          .map(([k, v]) => ` ${k}=${formatFieldValue(v)}`)
          .join('');
    // ISO 8601 in UTC, the level and the event name first, so a line sorts, filters and greps by them.
    write(`${new Date().toISOString()} symbi mcp: ${level} ${fields.event}: ${escapeToOneLine(message)}${extra}\n`);
  };
  return {
    format: 'text',
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    write: log,
  };
}

function jsonLog(write: (line: string) => void, secrets: readonly string[]): OperatorLog {
  // pino is loaded only for the JSON format, so text logging does not pay for it at startup.
  const pino = createRequire(import.meta.url)('pino') as typeof PinoFactory;
  // Written synchronously (through the one writer) so nothing is lost when the process exits right after.
  // pino's own numeric levels (30 info, 40 warn, 50 error) and its `pid` and `hostname`, so pino's
  // tools filter by level (pino-pretty --minimumLevel warn) and a collector tells two servers apart.
  const logger: Logger = pino(
    { base: { pid: process.pid, hostname: os.hostname(), component: 'symbi-mcp' }, timestamp: pino.stdTimeFunctions.isoTime },
    { write },
  );
  const log = (level: LogLevel, rawMessage: string, rawFields: LogFields): void => {
    const { message, fields } = redacted(rawMessage, rawFields, secrets);
    logger[level](fields, message);
  };
  return {
    format: 'json',
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    write: log,
  };
}

/**
 * The operator's log on standard error, in short text lines or one JSON object per line.
 * `secrets` (configuredSecrets: the provider keys) never leave through it. `sink` takes each
 * whole line instead of descriptor 2: a session run inside a test process (test/support/in-process-server.ts).
 */
export function createOperatorLog(format: LogFormat, secrets: readonly string[] = [], sink?: (line: string) => void): OperatorLog {
  const kept = secrets.filter((s) => s.length > 0);
  const toStderr = stderrWriter(kept);
  const write = sink === undefined ? toStderr : (line: string): void => sink(redactSecrets(line, kept));
  const log = format === 'json' ? jsonLog(write, kept) : textLog(write, kept);
  // Said once, by the log that makes the exception, so no one wonders why a dummy key shows.
  const short = shortKeysLeftAsText(kept);
  if (short > 0) {
    log.info(
      `${short === 1 ? 'a configured key is' : `${short} configured keys are`} shorter than ${REDACTED_KEY_MIN_CHARS} characters: taken for a local endpoint's dummy key (x, ollama, lm-studio), left as text on standard error and not looked for in answers`,
      {
        event: 'startup.short_key',
        keys: short,
        min_chars: REDACTED_KEY_MIN_CHARS,
      },
    );
  }
  return log;
}

/** Captured lines said; then one notice, then nothing more (a chatty library cannot flood the log). */
const CAPTURED_STDERR_LINES_MAX = 1000;
/** Characters of one captured line shown (the rest is cut, marked). */
const CAPTURED_LINE_MAX_CHARS = 500;

/**
 * Takes over this process's `process.stderr` stream, so what a library prints there
 * (console.error, console.warn, process.stderr.write, Node's own warnings) and what a worker
 * thread prints on its standard error (Node pipes each thread's stderr into this stream) reaches
 * descriptor 2 only as lines of `log`: redacted, cut and counted. console.log, .info and .debug
 * go the same way (they would otherwise reach the MCP channel). Writes to descriptor 2 by
 * number (fs.writeSync(2, ...)) pass no stream and stay out of reach (docs/running.md).
 */
export function captureStandardError(log: OperatorLog, secrets: readonly string[] = []): void {
  let said = 0;
  const say = (raw: string): void => {
    if (raw.trim() === '' || said > CAPTURED_STDERR_LINES_MAX) return;
    said += 1;
    if (said > CAPTURED_STDERR_LINES_MAX) {
      log.warn(`further standard error output of libraries and worker threads is dropped (${CAPTURED_STDERR_LINES_MAX} lines shown)`, {
        event: 'stderr.other',
      });
      return;
    }
    let line = redactKeys(raw, secrets, { atEdges: true });
    if (line.length > CAPTURED_LINE_MAX_CHARS) line = `${line.slice(0, CAPTURED_LINE_MAX_CHARS)}... (cut)`;
    log.warn('standard error output of a library or worker thread', { event: 'stderr.other', line });
  };
  // Redacted before it is cut into lines, so a key a newline split within the held text is found whole.
  takeOverStream(
    process.stderr,
    lineSink(say, (held) => redactKeys(held, secrets)),
  );
  // console.log, .info and .debug already write to standard error (mcp-command.ts keepConsoleOffStdout), so they reach this capture too.
}

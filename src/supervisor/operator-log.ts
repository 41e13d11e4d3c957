import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Logger, pino as PinoFactory } from 'pino';
import { escapeToOneLine } from '../shared/text/one-line-text.js';

// Everything the server says to an operator goes to standard error: standard
// output is the MCP channel and must carry JSON-RPC messages only. Callers pass
// short messages and plain fields; never prompts, responses or key material.

export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

export type LogFields = Record<string, unknown>;

export interface OperatorLog {
  readonly format: LogFormat;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

function formatFieldValue(value: unknown): string {
  // JSON.stringify leaves C1 and bidirectional controls as they are; escapeToOneLine does not.
  if (typeof value === 'string') return escapeToOneLine(/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value));
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- JSON.stringify gives undefined only for undefined, a function or a symbol, which String spells
    return escapeToOneLine(JSON.stringify(value) ?? String(value));
  } catch {
    return '[unserialisable]';
  }
}

function writeStderr(text: string): void {
  try {
    fs.writeSync(2, text);
  } catch {
    // A closed stderr must never take the server down.
  }
}

function textLog(): OperatorLog {
  const write = (level: string, message: string, fields?: LogFields): void => {
    const prefix = level === 'info' ? 'symbi mcp: ' : `symbi mcp: ${level}: `;
    // Startup summary lines already say everything in the message; their fields are for JSON readers.
    const summaryLine = typeof fields?.event === 'string' && fields.event.startsWith('startup.');
    const extra = fields && !summaryLine
      ? Object.entries(fields)
          .filter(([k]) => k !== 'event')
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => ` ${k}=${formatFieldValue(v)}`)
          .join('')
      : '';
    writeStderr(`${prefix}${escapeToOneLine(message)}${extra}\n`);
  };
  return {
    format: 'text',
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warning', m, f),
    error: (m, f) => write('error', m, f),
  };
}

function jsonLog(): OperatorLog {
  // pino is loaded only for the JSON format, so text logging does not pay for it at startup.
  const pino = createRequire(import.meta.url)('pino') as typeof PinoFactory;
  // Synchronous writes to fd 2 so nothing is lost when the process exits right after.
  const logger: Logger = pino(
    { base: { component: 'symbi-mcp' }, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    pino.destination({ dest: 2, sync: true }),
  );
  return {
    format: 'json',
    info: (m, f) => logger.info(f ?? {}, m),
    warn: (m, f) => logger.warn(f ?? {}, m),
    error: (m, f) => logger.error(f ?? {}, m),
  };
}

/** The operator's log on standard error, in short text lines or one JSON object per line. */
export function createOperatorLog(format: LogFormat): OperatorLog {
  return format === 'json' ? jsonLog() : textLog();
}

import assert from 'node:assert/strict';

// The server's standard error read back as events (docs/running.md, "Reading standard error"):
// one line per event, in the text format or as JSON objects.

/** One standard error line: its time, level, event name, message and fields. */
export interface OperatorLine {
  time: string;
  level: string;
  event: string;
  /** The message (JSON: `msg`; text: everything after the event's name, fields included). */
  text: string;
  /** JSON: the whole object; text: the `key=value` fields, JSON values parsed, the others as strings. */
  fields: Record<string, unknown>;
}

/** pino's numeric levels the server writes, by the names the text format uses. */
export const JSON_LEVELS: Record<number, string> = { 30: 'info', 40: 'warn', 50: 'error' };

const TEXT_LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) symbi mcp: (info|warn|error) ([a-z_.]+): (.*)$/;

/** Every line of `stderr` in `format`; asserts each has the documented shape. */
export function parseOperatorLines(stderr: string, format: 'text' | 'json'): OperatorLine[] {
  return stderr
    .split('\n')
    .filter((l) => l !== '')
    .map((raw) => {
      if (format === 'json') {
        const o = JSON.parse(raw) as Record<string, unknown>;
        // pino's numeric levels, read as the text format's names.
        const level = JSON_LEVELS[o.level as number];
        assert.ok(level !== undefined, `a pino numeric level (30, 40 or 50): ${raw}`);
        return { time: String(o.time), level, event: String(o.event), text: String(o.msg), fields: o };
      }
      const m = TEXT_LINE.exec(raw);
      assert.ok(m, `a text line of the documented shape: ${raw}`);
      const fields: Record<string, unknown> = {};
      for (const f of m[4]!.matchAll(/ ([a-z0-9_]+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\{[^}]*\}|\S+)/g)) {
        const value = f[2]!;
        fields[f[1]!] = /^["[{]/.test(value) ? JSON.parse(value) : value;
      }
      return { time: m[1]!, level: m[2]!, event: m[3]!, text: m[4]!, fields };
    });
}

// Turns Cedar's structured errors into the one-line messages operators read on stderr.
import type { DetailedError } from './cedar-engine.js';
import { foldToOneLine } from '../text/one-line-text.js';
import { lineColumnOfByteOffset } from './cedar-statements.js';

/**
 * "line L, column C: message (expected …; hint)" for the first error, with a count of
 * the rest. `source` is the text the error offsets refer to; `byteBase` shifts them when
 * that text was evaluated on its own but lives inside a larger file.
 */
export function describeCedarErrors(errors: readonly DetailedError[], source?: string, byteBase = 0): string {
  const first = errors[0];
  if (first === undefined) return 'Cedar reported an unspecified error';
  let text = first.message;
  const location = first.sourceLocations?.[0];
  const details: string[] = [];
  if (location?.label) details.push(location.label);
  if (first.help) details.push(first.help);
  if (details.length > 0) text += ` (${details.join('; ')})`;
  if (location !== undefined && source !== undefined) {
    const { line, column } = lineColumnOfByteOffset(source, byteBase + location.start);
    text = `line ${line}, column ${column}: ${text}`;
  }
  if (errors.length > 1) text += ` (and ${errors.length - 1} more)`;
  // Cedar messages can span lines.
  return foldToOneLine(text);
}

/** Line and column of the first error in `source` (shifted by `byteBase`), when Cedar located it. */
export function cedarErrorPosition(errors: readonly DetailedError[], source: string, byteBase = 0): { line: number; column: number } | undefined {
  const location = errors[0]?.sourceLocations?.[0];
  return location === undefined ? undefined : lineColumnOfByteOffset(source, byteBase + location.start);
}

import { AGENTS_MD_GUIDANCE_MAX_CHARS } from './limits.js';

// AGENTS.md may carry a generated section between two marker lines. Only that
// section is guidance for inference; the rest of the file is for people and is
// never sent to a model.

const AGENTS_MD_START_MARKER = '<!-- agents-md:auto-start -->';
const AGENTS_MD_END_MARKER = '<!-- agents-md:auto-end -->';

export interface AgentsMdGuidance {
  /** The generated section, at most AGENTS_MD_GUIDANCE_MAX_CHARS code points including the cut mark. */
  text: string;
  /** True when the section was longer than the limit and was cut. */
  cut: boolean;
  /** Length of the whole section in code points, before any cut. */
  originalChars: number;
}

const GUIDANCE_CUT_MARK = '\n[guidance cut: the generated section exceeds 2,000 characters]';

function markerLineIndex(lines: readonly string[], marker: string, from: number): number {
  for (let i = from; i < lines.length; i++) {
    if (lines[i]!.trim() === marker) return i;
  }
  return -1;
}

/**
 * Returns the generated section (the lines strictly between the start and the
 * following end marker line), cut at a code point boundary, or null when the
 * file has no complete section.
 */
export function extractAgentsMdGuidance(text: string, maxChars: number = AGENTS_MD_GUIDANCE_MAX_CHARS): AgentsMdGuidance | null {
  const lines = text.split(/\r?\n/);
  const start = markerLineIndex(lines, AGENTS_MD_START_MARKER, 0);
  if (start < 0) return null;
  const end = markerLineIndex(lines, AGENTS_MD_END_MARKER, start + 1);
  if (end < 0) return null;
  const section = lines
    .slice(start + 1, end)
    .join('\n')
    .replace(/^\n+|\n+$/g, '');
  const codePoints = Array.from(section);
  if (codePoints.length <= maxChars) return { text: section, cut: false, originalChars: codePoints.length };
  const mark = Array.from(GUIDANCE_CUT_MARK);
  const keep = Math.max(0, maxChars - mark.length);
  return { text: codePoints.slice(0, keep).join('') + GUIDANCE_CUT_MARK, cut: true, originalChars: codePoints.length };
}

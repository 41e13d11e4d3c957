// Why a model stopped, in one provider-neutral vocabulary, mapped from each wire format's own
// values in one table. Only `complete` is ever released to the MCP caller: every other value is a
// tool error saying what happened, and no model text leaves.
//
// Sources (checked 2026-11-30):
// - OpenAI Chat Completions, `choices[].finish_reason`: stop, length, content_filter, tool_calls,
//   function_call (deprecated); a refusal arrives as `message.refusal` (content null) or as a
//   content part of type "refusal" with finish_reason "stop".
//   https://platform.openai.com/docs/api-reference/chat/object
// - OpenRouter (same wire format): finish_reason "error" with a choice-level `error` object when the
//   model failed mid-generation; https://openrouter.ai/docs/api-reference/errors and /docs/responses.
// - Anthropic Messages, `stop_reason`: end_turn, stop_sequence, max_tokens, tool_use, pause_turn,
//   refusal, model_context_window_exceeded.
//   https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons
//
// A local OpenAI-compatible server (Ollama, vLLM, LM Studio) may leave finish_reason out or null; that
// answer is treated as complete, since those servers report an unfinished answer as "length".
// A value the table does not name is `unknown`; the provider's own spelling of it goes to standard
// error only (normalizeFinish), since a provider can put any text there.

import type { WireFormat } from './provider-kinds.js';

export type FinishReason = 'complete' | 'truncated' | 'refused' | 'filtered' | 'tool_use' | 'error' | 'unknown';

export const FINISH_REASONS: readonly FinishReason[] = ['complete', 'truncated', 'refused', 'filtered', 'tool_use', 'error', 'unknown'];

interface FinishMapping {
  /** The provider's value; null stands for a missing or null field. */
  raw: string | null;
  finish: FinishReason;
  /** Our own words for the tool error, never the provider's. */
  explanation: string;
}

interface FinishRow extends FinishMapping {
  wire: WireFormat;
}

const CUT_AT_OUTPUT_LIMIT = 'the answer was cut off at the output token limit';

// One list per wire format: a wire format without its list does not compile.
const FINISH_MAPS = {
  'openai-chat': [
    { raw: 'stop', finish: 'complete', explanation: 'the model finished its answer' },
    { raw: null, finish: 'complete', explanation: 'the server gave no finish reason (a local server); treated as finished' },
    { raw: 'length', finish: 'truncated', explanation: `${CUT_AT_OUTPUT_LIMIT} (a reasoning model may have spent it all on thinking)` },
    { raw: 'content_filter', finish: 'filtered', explanation: "the provider's content filter withheld or cut the answer" },
    { raw: 'tool_calls', finish: 'tool_use', explanation: 'the model proposed a tool call' },
    { raw: 'function_call', finish: 'tool_use', explanation: 'the model proposed a function call' },
    { raw: 'error', finish: 'error', explanation: 'the provider reported an error while generating the answer' },
  ],
  'anthropic-messages': [
    { raw: 'end_turn', finish: 'complete', explanation: 'the model finished its answer' },
    { raw: 'stop_sequence', finish: 'complete', explanation: 'the model reached a stop sequence' },
    { raw: 'max_tokens', finish: 'truncated', explanation: CUT_AT_OUTPUT_LIMIT },
    { raw: 'model_context_window_exceeded', finish: 'truncated', explanation: "the answer was cut off at the model's context window" },
    { raw: 'pause_turn', finish: 'truncated', explanation: 'the provider paused the turn before the answer was finished' },
    { raw: 'refusal', finish: 'refused', explanation: 'the model refused to answer' },
    { raw: 'tool_use', finish: 'tool_use', explanation: 'the model proposed a tool call' },
  ],
} satisfies Record<WireFormat, readonly FinishMapping[]>;

/** Every wire format's rows, in one list. */
export const FINISH_TABLE: readonly FinishRow[] = (Object.keys(FINISH_MAPS) as WireFormat[]).flatMap((wire) =>
  FINISH_MAPS[wire].map((mapping: FinishMapping) => ({ wire, ...mapping })),
);

const SHORT_IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/**
 * The value when it is a short identifier (letters, digits, `_ . : -`, at most 64 characters), else
 * null. Provider identifiers (request ids, error types) reach the journal only through this filter,
 * so no free text (a model's words, an echoed prompt) can ride along; the caller never gets them.
 */
export function shortIdentifier(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return typeof value === 'string' && SHORT_IDENTIFIER.test(value) ? value : null;
}

export interface NormalizedFinish {
  finish: FinishReason;
  /** The provider's value when the table names it (so always one of our fixed words); null otherwise. */
  providerValue: string | null;
  /**
   * A value the table does not name, as the provider sent it (or its JSON type when it is not a
   * string), for standard error only: it is provider-chosen text, so neither the caller nor the
   * journal gets it.
   */
  unrecognised?: string;
}

/** Maps a provider's finish value to the vocabulary; anything the table does not name is `unknown`. */
export function normalizeFinish(wire: WireFormat, raw: unknown): NormalizedFinish {
  const missing = raw === undefined || raw === null;
  const row = FINISH_TABLE.find((r) => r.wire === wire && (missing ? r.raw === null : r.raw === raw));
  if (row !== undefined) return { finish: row.finish, providerValue: row.raw };
  if (missing) return { finish: 'unknown', providerValue: null };
  return { finish: 'unknown', providerValue: null, unrecognised: typeof raw === 'string' ? raw : `a JSON ${Array.isArray(raw) ? 'array' : typeof raw}` };
}

const GENERAL_EXPLANATION: Record<FinishReason, string> = {
  complete: 'the model finished its answer',
  truncated: 'the answer was cut off before it was finished',
  refused: 'the model refused to answer',
  filtered: "the provider's content filter withheld or cut the answer",
  tool_use: 'the model proposed a tool call',
  error: 'the provider reported an error while generating the answer',
  unknown: 'the provider gave no finish reason this server recognises, and only a finished answer is released',
};

/**
 * Our one-line account of a recorded finish, for the tool error and the terminal record. It quotes the
 * provider's value only when the table names it, so the words are always ours.
 */
export function explainFinish(finish: FinishReason, providerValue: string | null): string {
  const named = FINISH_TABLE.some((r) => r.raw !== null && r.raw === providerValue);
  const row = FINISH_TABLE.find((r) => r.finish === finish && r.raw !== null && r.raw === providerValue);
  const explanation = row?.explanation ?? GENERAL_EXPLANATION[finish];
  return named ? `${explanation} (provider finish reason "${providerValue}")` : explanation;
}

/** Why an answer with this finish is withheld before Cedar is asked, or undefined for a finished one. */
export function finishWithheld(finish: FinishReason, providerValue: string | null): string | undefined {
  // Only a finished answer is released; a cut, refused, filtered or failed one is withheld whole.
  return finish === 'complete' ? undefined : `${explainFinish(finish, providerValue)}; the response was withheld`;
}

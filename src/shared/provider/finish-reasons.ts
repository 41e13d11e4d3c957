// Why a model stopped, in one provider-neutral vocabulary (finish-vocabulary.ts), mapped from each
// wire format's own values. Each wire format declares its values with their sources (wire-*.ts);
// this module puts them into one table and explains a recorded finish in our words. Only `complete`
// is ever released to the MCP caller: every other value is a tool error saying what happened, and no
// model text leaves. A value a wire format's rows do not name is `unknown`; the provider's own
// spelling of it goes to standard error only (normalizeFinish), since a provider can put any text there.

import { normalizeWith, type FinishMapping, type FinishReason, type NormalizedFinish } from './finish-vocabulary.js';
import { WIRE_FORMAT_NAMES, WIRE_FORMATS, type WireFormat } from './provider-kinds.js';

export { FINISH_REASONS, shortIdentifier, type FinishMapping, type FinishReason, type NormalizedFinish } from './finish-vocabulary.js';

interface FinishRow extends FinishMapping {
  wire: WireFormat;
}

/** Every wire format's rows, in one list. */
export const FINISH_TABLE: readonly FinishRow[] = WIRE_FORMAT_NAMES.flatMap((wire) => WIRE_FORMATS[wire].finish.rows.map((mapping) => ({ wire, ...mapping })));

/** Maps a provider's finish value to the vocabulary; anything its wire format's rows do not name is `unknown`. */
export function normalizeFinish(wire: WireFormat, raw: unknown): NormalizedFinish {
  return normalizeWith(WIRE_FORMATS[wire].finish.rows, raw);
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

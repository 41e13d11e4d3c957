// The journal line format shared with the Symbiont runtime (docs/formats.md,
// "Journal file"): one record per line,
//   {"payload":<payload>,"signature":"<base64>"}\n
// where the signature covers exactly the payload bytes as they appear.

export const JOURNAL_FORMAT_VERSION = 2;
export const LINE_PREFIX = Buffer.from('{"payload":', 'utf8');
export const SIGNATURE_KEY = Buffer.from(',"signature":"', 'utf8');
const LINE_END = Buffer.from('"}\n', 'utf8');
export const NEWLINE = 0x0a;
export const GENESIS_PREVIOUS_HASH = '0'.repeat(64);
export const JOURNAL_FILE_SUFFIX = '.jsonl';

export const STARTED_EVENT = 'Started';
export const TERMINATED_EVENT = 'Terminated';
export const REQUESTED_EVENT = 'DirectInferenceRequested';
export const RESPONSE_EVENT = 'DirectInferenceResponseReceived';
export const FINISHED_EVENT = 'DirectInferenceFinished';

/** Symbiont's terminal words for a run its caller cancelled (reasoning_loop.rs, run_cancellable). */
export const RUN_CANCELLED_MESSAGE = 'agent execution cancelled';
/** Symbiont's terminal words for a failed provider call: this prefix, then the call's error (phases.rs, produce_output). */
export const INFERENCE_FAILED_PREFIX = 'Inference failed: ';

/** Symbiont's `TerminationReason` (journal-records.ts); the 0.1 format wrote only the first and the last. */
export type TerminalReason =
  | 'Completed'
  | 'MaxIterations'
  | 'MaxTokens'
  | 'Timeout'
  | 'UnconfirmedEffects'
  | { PolicyDenial: { reason: string } }
  | { Error: { message: string } };

/** Assembles one journal line from the exact payload bytes and their signature. */
export function encodeRecordLine(payload: Uint8Array, signature: Uint8Array): Buffer {
  const sig = Buffer.from(signature).toString('base64');
  return Buffer.concat([LINE_PREFIX, payload, SIGNATURE_KEY, Buffer.from(sig, 'ascii'), LINE_END]);
}

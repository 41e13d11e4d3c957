// The one rule for keeping keys out of what a worker sends to standard error (a provider's error
// words, a stray line a library printed): the configured key wherever it appears, and anything
// shaped like another key, since an echoed request can carry one (sk-..., sk-ant-..., Bearer tokens).

const REDACTED = '[redacted]';
const KEY_SHAPED = /\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}/g;
const BEARER_TOKEN = /\bBearer\s+\S+/gi;

/** `text` with each of `secrets` and every key-shaped string replaced by "[redacted]". */
export function redactKeys(text: string, secrets: readonly string[]): string {
  let cleaned = text;
  for (const secret of secrets) if (secret !== '') cleaned = cleaned.split(secret).join(REDACTED);
  return cleaned.replace(KEY_SHAPED, REDACTED).replace(BEARER_TOKEN, `Bearer ${REDACTED}`);
}

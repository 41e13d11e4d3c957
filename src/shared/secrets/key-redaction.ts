// The one rule for keeping the server's secrets (the configured provider keys) out of what it
// writes to standard error (operator-log.ts, the only writer) and out of the answers it
// releases (invocation.ts). A key is found however it was split or disguised on the way: by
// white space or control characters (a provider error that broke it over two lines), by escapes
// that stand for them (`\n` in a JSON string or a log field, `\u000a`, doubled backslashes), by
// invisible format characters (zero-width, bidi), or by case. The comparison runs on a skeleton
// of the text with every such separator taken out, and the matching stretch of the original
// text is replaced. Text from elsewhere (a provider's words, a library's stray line) also loses
// anything shaped like another key, since an echoed request can carry one (sk-..., Bearer tokens).

export const REDACTED = '[redacted]';
const KEY_SHAPED = /\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}/g;
const BEARER_TOKEN = /\bBearer\s+\S+/gi;
/**
 * Keys shorter than this are placeholders (local servers take "ollama", "none", "x"): looking
 * for them loosely would withhold ordinary answers, so they are replaced only where they appear
 * verbatim on standard error. Every provider's real keys are far longer.
 */
export const SECRET_MIN_CHARS = 12;
/** A key fragment this long at a line's edge is taken for part of a key a line break split. */
const EDGE_FRAGMENT_MAX_CHARS = 8;
/** What splits nothing: white space, C0 and C1 controls, format characters. */
const SEPARATOR = /^[\s\p{Cc}\p{Cf}]$/u;

interface Skeleton {
  /** The text without separators, lower-cased where that keeps the length. */
  chars: string;
  /** Per skeleton character, where in the original text it starts and ends (when asked for). */
  starts?: number[];
  ends?: number[];
}

/** One escape at `i` (a backslash there): its length and the character it stands for, if any. */
function readEscape(text: string, i: number): { length: number; char: string | undefined } {
  let j = i;
  while (text[j] === '\\') j += 1;
  const letter = text[j];
  if (letter === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(j + 1, j + 5))) {
    return { length: j + 5 - i, char: String.fromCharCode(parseInt(text.slice(j + 1, j + 5), 16)) };
  }
  if (letter === 'x' && /^[0-9a-fA-F]{2}$/.test(text.slice(j + 1, j + 3))) {
    return { length: j + 3 - i, char: String.fromCharCode(parseInt(text.slice(j + 1, j + 3), 16)) };
  }
  if (letter !== undefined && 'nrtfvb0'.includes(letter)) return { length: j + 1 - i, char: '\n' };
  // Backslashes before anything else (`\"`, `\\`) only escape: they stand for nothing.
  return { length: j - i, char: undefined };
}

function skeletonOf(text: string, withPositions: boolean): Skeleton {
  const chars: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let i = 0;
  while (i < text.length) {
    let char: string | undefined;
    let length: number;
    if (text.charCodeAt(i) === 0x5c) {
      ({ char, length } = readEscape(text, i));
    } else {
      char = String.fromCodePoint(text.codePointAt(i) as number);
      length = char.length;
    }
    if (char !== undefined && !SEPARATOR.test(char)) {
      const lower = char.toLowerCase();
      const kept = lower.length === char.length ? lower : char;
      chars.push(kept);
      if (withPositions) {
        for (let k = 0; k < kept.length; k += 1) {
          starts.push(i);
          ends.push(i + length);
        }
      }
    }
    i += length;
  }
  return withPositions ? { chars: chars.join(''), starts, ends } : { chars: chars.join('') };
}

const ESCAPE = /\\+(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([nrtfvb0]))|\\+/g;
const SEPARATORS = /[\s\p{Cc}\p{Cf}]+/gu;

/**
 * The skeleton's characters alone, by native replaces (a megabyte answer in milliseconds): the
 * same escapes read, the same separators dropped, case folded. Used to decide whether there is
 * anything to find before the positions are worked out character by character.
 */
function flatten(text: string): string {
  return text
    .replace(ESCAPE, (_m, u?: string, x?: string, letter?: string) =>
      u !== undefined ? String.fromCharCode(parseInt(u, 16)) : x !== undefined ? String.fromCharCode(parseInt(x, 16)) : letter !== undefined ? ' ' : '')
    .replace(SEPARATORS, '')
    .toLowerCase();
}

/** Whether the flattened text holds a key, or (with `atEdges`) a key fragment at its start or end. */
function mayHold(flat: string, keys: readonly string[], atEdges: boolean): boolean {
  for (const key of keys) {
    if (flat.includes(key)) return true;
    if (!atEdges) continue;
    const least = Math.min(EDGE_FRAGMENT_MAX_CHARS, Math.ceil(key.length / 2));
    if (flat.includes(key.slice(0, least)) || flat.includes(key.slice(key.length - least))) return true;
  }
  return false;
}

/** The secrets worth looking for loosely, as the skeleton spells them, longest first (a key holding another is replaced whole). */
function needles(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < SECRET_MIN_CHARS) continue;
    const needle = flatten(secret);
    if (needle.length > 0) out.add(needle);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/** Original-text ranges holding one of `secrets`, however split, escaped or cased (and key fragments at the edges when asked). */
function secretRanges(text: string, secrets: readonly string[], atEdges: boolean): [number, number][] {
  const keys = needles(secrets);
  if (keys.length === 0 || !mayHold(flatten(text), keys, atEdges)) return [];
  const skeleton = skeletonOf(text, true);
  const { chars } = skeleton;
  const starts = skeleton.starts as number[];
  const ends = skeleton.ends as number[];
  const ranges: [number, number][] = [];
  const take = (from: number, to: number): void => {
    ranges.push([starts[from] as number, ends[to - 1] as number]);
  };
  for (const key of keys) {
    for (let at = chars.indexOf(key); at !== -1; at = chars.indexOf(key, at + key.length)) take(at, at + key.length);
    if (!atEdges || chars.length === 0) continue;
    // A line break that split a key over two lines leaves its head at the end of one line and
    // its tail at the start of the next. Fragments from EDGE_FRAGMENT_MAX_CHARS characters (or
    // half the key) on are replaced, so at most that much of a key can show, and never half.
    const least = Math.min(EDGE_FRAGMENT_MAX_CHARS, Math.ceil(key.length / 2));
    for (let n = Math.min(key.length - 1, chars.length); n >= least; n -= 1) {
      if (chars.endsWith(key.slice(0, n))) {
        take(chars.length - n, chars.length);
        break;
      }
    }
    for (let n = Math.min(key.length - 1, chars.length); n >= least; n -= 1) {
      if (chars.startsWith(key.slice(key.length - n))) {
        take(0, n);
        break;
      }
    }
  }
  return ranges;
}

function replaceRanges(text: string, ranges: [number, number][]): string {
  if (ranges.length === 0) return text;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let at = 0;
  for (const [start, end] of sorted) {
    if (start < at) {
      // Overlaps the stretch just replaced: extend it.
      at = Math.max(at, end);
      continue;
    }
    out += `${text.slice(at, start)}${REDACTED}`;
    at = end;
  }
  return out + text.slice(at);
}

export interface RedactionOptions {
  /** `text` is one line of several: a fragment of a key at its start or end is replaced too. */
  atEdges?: boolean;
}

/** `text` with each of `secrets` replaced by "[redacted]", however split, escaped or cased (short placeholders verbatim only). */
export function redactSecrets(text: string, secrets: readonly string[], options: RedactionOptions = {}): string {
  let cleaned = replaceRanges(text, secretRanges(text, secrets, options.atEdges === true));
  for (const secret of secrets) {
    if (secret.length > 0 && secret.length < SECRET_MIN_CHARS) cleaned = cleaned.split(secret).join(REDACTED);
  }
  return cleaned;
}

/** Text from elsewhere: `secrets` as redactSecrets replaces them, and every key-shaped string too. */
export function redactKeys(text: string, secrets: readonly string[], options: RedactionOptions = {}): string {
  return redactSecrets(text, secrets, options).replace(KEY_SHAPED, REDACTED).replace(BEARER_TOKEN, `Bearer ${REDACTED}`);
}

/** What may stand between two characters of a key: separators, and escapes of them. */
const LOOSE_GAP = String.raw`(?:[\s\p{Cc}\p{Cf}]|\\+(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtfvb0])|\\+)*`;

/** `key` as one regular expression that lets separators and escapes in between and ignores case. */
function looseKeyPattern(key: string): RegExp {
  const chars = [...key].map((c) => {
    const hex = (c.codePointAt(0) as number).toString(16).padStart(4, '0');
    // The character by its code point (no escaping to get wrong), or a \uXXXX escape of it.
    return `(?:\\u{${hex}}|\\\\+u${hex})`;
  });
  return new RegExp(chars.join(LOOSE_GAP), 'iu');
}

/**
 * Whether `text` holds one of `secrets` (of at least SECRET_MIN_CHARS), however split, escaped or
 * cased: one regular-expression search per key, so a megabyte answer costs milliseconds.
 */
export function containsSecret(text: string, secrets: readonly string[]): boolean {
  return needles(secrets).some((key) => looseKeyPattern(key).test(text));
}

/** The key variables a provider can be configured with (provider-config.ts reads one of them). */
const KEY_VARIABLES = ['OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY'];

/**
 * The secrets configured in `env`: every provider key variable that is set (whichever provider
 * is chosen), and the password of a proxy URL.
 */
export function configuredSecrets(env: NodeJS.ProcessEnv): string[] {
  const secrets = new Set<string>();
  for (const name of KEY_VARIABLES) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '') secrets.add(value);
  }
  for (const name of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY']) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    try {
      const password = decodeURIComponent(new URL(value).password);
      if (password !== '') secrets.add(password);
    } catch {
      // not a URL: provider-config.ts refuses it with its own line
    }
  }
  return [...secrets];
}

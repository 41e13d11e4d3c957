// The one rule for keeping the server's secrets (the configured provider keys) out of what it
// writes to standard error (operator-log.ts, the only writer) and out of the answers it
// releases (invocation.ts). A key is found however it was split or disguised on the way: by
// white space or control characters (a provider error that broke it over two lines), by escapes
// that stand for them (`\n` in a JSON string or a log field, `\u000a`, doubled backslashes), by
// invisible format characters (zero-width, bidi), or by case. The comparison runs on a skeleton
// of the text with every such separator taken out, and the matching stretch of the original
// text is replaced. Text from elsewhere (a provider's words, a library's stray line) also loses
// anything shaped like another key, since an echoed request can carry one (each wire format declares
// its keys' shape: sk-..., AIza...; and Bearer tokens).
//
// A provider or a proxy may also echo the key encoded: the `Authorization` header in base64 or
// base64url (whole, so the key sits at any byte offset in it), the key in hex or percent-encoded,
// in full-width or other compatibility forms, or reversed. Percent escapes are read like the
// backslash escapes above, and every character is folded by NFKC (full-width "ｓｋ" is "sk"), so
// those need nothing more; the other encodings are looked for as further spellings of the key
// (encodedSpellings). A transform no one anticipated (a key cut into pieces and reordered,
// encrypted, spelled out in words) no filter can find: docs/limits.md says so.

import { KEY_VARIABLES, WIRE_FORMAT_NAMES, WIRE_FORMATS } from '../provider/provider-kinds.js';

export const REDACTED = '[redacted]';
/** Text shaped like any wire format's keys (wire-format.ts, keyShape). */
const KEY_SHAPED = new RegExp(WIRE_FORMAT_NAMES.map((wire) => `(?:${WIRE_FORMATS[wire].keyShape.source})`).join('|'), 'g');
const BEARER_TOKEN = /\bBearer\s+\S+/gi;
/**
 * Keys shorter than this are placeholders (local servers take "ollama", "none", "x"): looking
 * for them loosely would withhold ordinary answers, so they are replaced only where they appear
 * verbatim on standard error, and an answer holding one is not withheld. Every provider's real
 * keys are far longer.
 */
export const SECRET_MIN_CHARS = 12;
/**
 * Keys shorter than this are not secrets at all but the dummies local endpoints accept ("x",
 * "none", "ollama", "lm-studio" and "sk-no-key" at 9): replacing them even verbatim cuts ordinary
 * words out of every line ("Linux x64"), so they are left as text. The operator hears so once, at
 * startup (shortKeysLeftAsText).
 */
export const REDACTED_KEY_MIN_CHARS = 10;

/** How many of `secrets` are too short to be redacted (REDACTED_KEY_MIN_CHARS): they stay as text on standard error. */
export function shortKeysLeftAsText(secrets: readonly string[]): number {
  return secrets.filter((s) => s.length > 0 && s.length < REDACTED_KEY_MIN_CHARS).length;
}
/** A key fragment this long at a line's edge is taken for part of a key a line break split. */
const EDGE_FRAGMENT_MAX_CHARS = 8;

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

function skeletonOf(text: string, withPositions: boolean, percent = true): Skeleton {
  const chars: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let i = 0;
  while (i < text.length) {
    let char: string | undefined;
    let length: number;
    if (text.charCodeAt(i) === 0x5c) {
      ({ char, length } = readEscape(text, i));
    } else if (percent && text.charCodeAt(i) === 0x25 && PERCENT_ESCAPE.test(text.slice(i, i + 3))) {
      char = String.fromCharCode(parseInt(text.slice(i + 1, i + 3), 16));
      length = 3;
    } else {
      char = String.fromCodePoint(text.codePointAt(i) as number);
      length = char.length;
    }
    // NFKC may spell one character as several ("ﬁ" is "fi"), each of which is kept or dropped alone.
    const folded = char === undefined ? '' : fold(char).replace(SEPARATORS, '');
    if (folded.length > 0) {
      const lower = folded.toLowerCase();
      const kept = lower.length === folded.length ? lower : folded;
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

const ESCAPE = /\\+(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([nrtfvb0]))|\\+|%([0-9a-fA-F]{2})/g;
/** What splits nothing: white space, C0 and C1 controls, format characters. */
const SEPARATORS = /[\s\p{Cc}\p{Cf}]+/gu;
/** A percent escape (URL encoding) of one byte, read as the character of that code. */
const PERCENT_ESCAPE = /^%[0-9a-fA-F]{2}$/;
const NOT_ASCII = /[\u{80}-\u{10ffff}]+/gu;

/** `text` in its NFKC compatibility form, run by run of non-ASCII characters (ASCII is its own). */
function fold(text: string): string {
  return text.replace(NOT_ASCII, (c) => c.normalize('NFKC'));
}

/**
 * The skeleton's characters alone, by native replaces (a megabyte answer in milliseconds): the
 * same escapes read, the same separators dropped, case folded. Used to decide whether there is
 * anything to find before the positions are worked out character by character.
 */
function flatten(text: string, percent = true): string {
  const unescaped = text.replace(ESCAPE, (m: string, u?: string, x?: string, letter?: string, byte?: string) => {
    if (byte !== undefined && !percent) return m;
    const code = u ?? x ?? byte;
    return code !== undefined ? String.fromCharCode(parseInt(code, 16)) : letter !== undefined ? ' ' : '';
  });
  return fold(unescaped).replace(SEPARATORS, '').toLowerCase();
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

/**
 * The stretch of the base64 of `bytes`, at byte offset `offset` in a longer text (an
 * `Authorization: Basic` or `Bearer` header encoded whole), that does not depend on what
 * surrounds it: the characters whose six bits all come from `bytes`.
 */
function base64Core(bytes: Buffer, offset: 0 | 1 | 2, alphabet: 'base64' | 'base64url'): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString(alphabet);
  const first = Math.ceil((offset * 8) / 6);
  const last = Math.floor(((offset + bytes.length) * 8) / 6);
  return encoded.slice(first, last);
}

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of `bytes`, without padding. */
function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return bits > 0 ? out + BASE32_ALPHABET[(value << (5 - bits)) & 31] : out;
}

/** As base64Core, for base32 (five bytes to eight characters): the characters whose five bits all come from `bytes`. */
function base32Core(bytes: Buffer, offset: number): string {
  const encoded = base32(Buffer.concat([Buffer.alloc(offset), bytes]));
  return encoded.slice(Math.ceil((offset * 8) / 5), Math.floor(((offset + bytes.length) * 8) / 5));
}

/** The base64 and base64url cores of `bytes` at each alignment. */
function base64Cores(bytes: Buffer): string[] {
  return (['base64', 'base64url'] as const).flatMap((alphabet) => ([0, 1, 2] as const).map((offset) => base64Core(bytes, offset, alphabet)));
}

/**
 * Further spellings of `secret` a provider or proxy may echo: base64 and base64url at each
 * alignment, base32 at each alignment, hex (also colon-separated), the UTF-16 (LE and BE) bytes in
 * hex and base64, HTML numeric entities (decimal and hex), octal escapes, double percent-encoding,
 * reversed. JSON `\u`, `\x` and single percent escapes need no spelling: the search reads them.
 */
function encodedSpellings(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const utf16le = Buffer.from(secret, 'utf16le');
  const utf16be = Buffer.from(utf16le).swap16();
  const codePoints = [...secret].map((c) => c.codePointAt(0) as number);
  return [
    bytes.toString('hex'),
    [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(':'),
    [...secret].reverse().join(''),
    ...base64Cores(bytes),
    ...[0, 1, 2, 3, 4].map((offset) => base32Core(bytes, offset)),
    utf16le.toString('hex'),
    utf16be.toString('hex'),
    ...base64Cores(utf16le),
    ...base64Cores(utf16be),
    codePoints.map((code) => `&#${code};`).join(''),
    codePoints.map((code) => `&#x${code.toString(16)};`).join(''),
    [...bytes].map((byte) => `\\${byte.toString(8).padStart(3, '0')}`).join(''),
    [...bytes].map((byte) => `%25${byte.toString(16).padStart(2, '0')}`).join(''),
  ];
}

/** Each secret's needles, worked out once per secret (the log redacts every line with the same few). */
const needleCache = new Map<string, string[]>();

function needlesOf(secret: string): string[] {
  let found = needleCache.get(secret);
  if (found === undefined) {
    const own = flatten(secret);
    // An encoding too short to be told from ordinary text (a short secret's base64 core) is left out.
    const encoded = encodedSpellings(secret)
      .map((spelling) => flatten(spelling))
      .filter((needle) => needle.length >= SECRET_MIN_CHARS);
    found = [...new Set([own, ...encoded].filter((needle) => needle.length > 0))];
    if (needleCache.size < 64) needleCache.set(secret, found);
  }
  return found;
}

/** The secrets worth looking for loosely, as the skeleton spells them, with their encodings; longest first (a key holding another is replaced whole). */
function needles(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < SECRET_MIN_CHARS) continue;
    for (const needle of needlesOf(secret)) out.add(needle);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/** Original-text ranges holding one of `secrets`, however split, escaped or cased (and key fragments at the edges when asked). */
function secretRanges(text: string, secrets: readonly string[], atEdges: boolean): [number, number][] {
  const keys = needles(secrets);
  if (keys.length === 0) return [];
  const ranges = rangesOf(text, keys, atEdges, true);
  // A "%" just before a key that starts with two hex digits would be read as an escape and hide the
  // key's first character; the text is looked at again as it is, with no percent escape read.
  return text.includes('%') ? [...ranges, ...rangesOf(text, keys, atEdges, false)] : ranges;
}

/** secretRanges for one reading of percent escapes. */
function rangesOf(text: string, keys: readonly string[], atEdges: boolean, percent: boolean): [number, number][] {
  if (!mayHold(flatten(text, percent), keys, atEdges)) return [];
  const skeleton = skeletonOf(text, true, percent);
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

/** `text` with each of `secrets` replaced by "[redacted]", however split, escaped or cased (short placeholders verbatim only, dummies not at all). */
export function redactSecrets(text: string, secrets: readonly string[], options: RedactionOptions = {}): string {
  let cleaned = replaceRanges(text, secretRanges(text, secrets, options.atEdges === true));
  for (const secret of secrets) {
    if (secret.length >= REDACTED_KEY_MIN_CHARS && secret.length < SECRET_MIN_CHARS) cleaned = cleaned.split(secret).join(REDACTED);
  }
  return cleaned;
}

/** Text from elsewhere: `secrets` as redactSecrets replaces them, and every key-shaped string too. */
export function redactKeys(text: string, secrets: readonly string[], options: RedactionOptions = {}): string {
  return redactSecrets(text, secrets, options).replace(KEY_SHAPED, REDACTED).replace(BEARER_TOKEN, `Bearer ${REDACTED}`);
}

/** What may stand between two characters of a key: separators, and escapes of them. */
const LOOSE_GAP = String.raw`(?:[\s\p{Cc}\p{Cf}]|\\+(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtfvb0])|\\+|%(?:0[0-9a-fA-F]|1[0-9a-fA-F]|20|7[fF]))*`;

/** `key` as one regular expression that lets separators and escapes in between and ignores case. */
function looseKeyPattern(key: string): RegExp {
  const chars = [...key].map((c) => {
    const code = c.codePointAt(0) as number;
    const hex = code.toString(16).padStart(4, '0');
    // The character by its code point (no escaping to get wrong), a \uXXXX escape or a percent escape of it,
    // or its full-width form (NFKC folds U+FF01..U+FF5E onto ASCII "!".."~").
    const forms = [`\\u{${hex}}`, `\\\\+u${hex}`];
    if (code < 0x80) forms.push(`%${hex.slice(2)}`);
    if (code >= 0x21 && code <= 0x7e) forms.push(`\\u{${(code - 0x21 + 0xff01).toString(16)}}`);
    return `(?:${forms.join('|')})`;
  });
  return new RegExp(chars.join(LOOSE_GAP), 'iu');
}

/**
 * Whether `text` holds one of `secrets` (of at least SECRET_MIN_CHARS), however split, escaped,
 * encoded or cased: each key by one regular expression (which also takes any escape between two
 * of its characters for a gap), then every needle, the key and its encodings, in the folded text,
 * which reads every escape whatever the case of its digits (`\u0053` for a capital, a `\x` escape)
 * and folds every compatibility form. One expression per needle would cost many times that
 * (docs/benchmarks.md, "Key redaction and the answer check", has the figures).
 */
export function containsSecret(text: string, secrets: readonly string[]): boolean {
  const keys = needles(secrets);
  if (keys.length === 0) return false;
  const own = secrets.filter((secret) => secret.length >= SECRET_MIN_CHARS).map((secret) => flatten(secret));
  if (own.some((key) => key.length > 0 && looseKeyPattern(key).test(text))) return true;
  if (mayHold(flatten(text), keys, false)) return true;
  // A "%" just before a needle that starts with two hex digits would be read as an escape and hide
  // its first character: the text is looked at again with no percent escape read (as secretRanges does).
  return text.includes('%') && mayHold(flatten(text, false), keys, false);
}

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

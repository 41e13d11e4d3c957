// A JSON reader for signed evidence (journal payloads, SchemaPin schemas and
// key documents), where one text must have one meaning for every reader.
// JSON.parse keeps the last of two equal keys while other parsers keep the
// first or refuse, and it rounds every number to a double; RFC 8259 leaves
// both to the implementation (sections 4 and 6). This reader refuses a
// duplicate key at any depth, hands each number's exact text to the caller
// to judge, refuses escapes that encode a lone UTF-16 surrogate (text that
// has no UTF-8 form), and bounds nesting so it cannot exhaust the stack.
// Objects it builds have no prototype, so a "__proto__" key is plain data.

/** Nesting deeper than this is refused (the journal and tool schemas are far shallower). */
const STRICT_JSON_MAX_DEPTH = 512;

export class StrictJsonError extends Error {
  constructor(
    message: string,
    /** Where the problem is, as a path such as `entry.event.Started` (empty at the top). */
    readonly at: string,
    /** `syntax`: not JSON (or nested too deeply); `ambiguous`: JSON that readers may read differently. */
    readonly kind: 'syntax' | 'ambiguous',
  ) {
    super(message);
    this.name = 'StrictJsonError';
  }
}

export interface StrictJsonOptions {
  /** Judges one number's exact text; returns why it is refused, or undefined to accept it. */
  checkNumber?: (lexeme: string) => string | undefined;
  maxDepth?: number;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;
// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const SIMPLE_STRING = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Parses `text` as one JSON value with the rules above; throws StrictJsonError with a one-line reason. */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): unknown {
  const reader = new Reader(text, options.checkNumber, options.maxDepth ?? STRICT_JSON_MAX_DEPTH);
  reader.skipWhitespace();
  const value = reader.value([], 0);
  reader.skipWhitespace();
  if (reader.pos !== text.length) throw new StrictJsonError(`unexpected text after the JSON value at offset ${reader.pos}`, '', 'syntax');
  return value;
}

const PATH_TEXT_MAX_CHARS = 160;

/** A path for messages: keys joined with dots, array indexes in brackets, each key shown as JSON when it is not a plain name. */
export function jsonPathText(path: readonly (string | number)[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(part.length > 64 ? `${part.slice(0, 64)}...` : part)}]`;
    if (out.length > PATH_TEXT_MAX_CHARS) return `${out.slice(0, PATH_TEXT_MAX_CHARS)}...`;
  }
  return out;
}

class Reader {
  pos = 0;

  constructor(
    private readonly text: string,
    private readonly checkNumber: StrictJsonOptions['checkNumber'],
    private readonly maxDepth: number,
  ) {}

  private fail(message: string, path: readonly (string | number)[], kind: 'syntax' | 'ambiguous' = 'syntax'): never {
    const at = jsonPathText(path);
    throw new StrictJsonError(at === '' ? message : `${at}: ${message}`, at, kind);
  }

  skipWhitespace(): void {
    WHITESPACE.lastIndex = this.pos;
    WHITESPACE.exec(this.text);
    this.pos = WHITESPACE.lastIndex;
  }

  value(path: (string | number)[], depth: number): unknown {
    const c = this.text[this.pos];
    if (c === '{' || c === '[') {
      if (depth >= this.maxDepth) this.fail(`nested deeper than ${this.maxDepth} levels`, path);
      return c === '{' ? this.object(path, depth + 1) : this.array(path, depth + 1);
    }
    if (c === '"') return this.string(path);
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number(path);
    for (const [word, meaning] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return meaning;
      }
    }
    return this.fail(c === undefined ? 'the text ends where a value was expected' : `unexpected character at offset ${this.pos}`, path);
  }

  private object(path: (string | number)[], depth: number): Record<string, unknown> {
    const result = Object.create(null) as Record<string, unknown>;
    const seen = new Set<string>();
    this.pos += 1;
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos += 1;
      return result;
    }
    for (;;) {
      if (this.text[this.pos] !== '"') this.fail(`expected a key string at offset ${this.pos}`, path);
      const key = this.string(path);
      if (seen.has(key)) this.fail(`duplicate key ${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}...` : key)}`, path, 'ambiguous');
      seen.add(key);
      this.skipWhitespace();
      if (this.text[this.pos] !== ':') this.fail(`expected ":" at offset ${this.pos}`, path);
      this.pos += 1;
      this.skipWhitespace();
      path.push(key);
      result[key] = this.value(path, depth);
      path.pop();
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos += 1;
      if (next === '}') return result;
      if (next !== ',') this.fail(`expected "," or "}" at offset ${this.pos - 1}`, path);
      this.skipWhitespace();
    }
  }

  private array(path: (string | number)[], depth: number): unknown[] {
    const result: unknown[] = [];
    this.pos += 1;
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos += 1;
      return result;
    }
    for (;;) {
      path.push(result.length);
      result.push(this.value(path, depth));
      path.pop();
      this.skipWhitespace();
      const next = this.text[this.pos];
      this.pos += 1;
      if (next === ']') return result;
      if (next !== ',') this.fail(`expected "," or "]" at offset ${this.pos - 1}`, path);
      this.skipWhitespace();
    }
  }

  private string(path: readonly (string | number)[]): string {
    let out = '';
    this.pos += 1;
    for (;;) {
      SIMPLE_STRING.lastIndex = this.pos;
      SIMPLE_STRING.exec(this.text);
      out += this.text.slice(this.pos, SIMPLE_STRING.lastIndex);
      this.pos = SIMPLE_STRING.lastIndex;
      const c = this.text[this.pos];
      if (c === '"') {
        this.pos += 1;
        break;
      }
      if (c === undefined) this.fail('a string is not closed', path);
      if (c !== '\\') this.fail(`a control character (U+${c.charCodeAt(0).toString(16).padStart(4, '0')}) is not escaped in a string`, path);
      const e = this.text[this.pos + 1];
      if (e === 'u') {
        const hex = this.text.slice(this.pos + 2, this.pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail(`a \\u escape needs four hexadecimal digits (offset ${this.pos})`, path);
        out += String.fromCharCode(parseInt(hex, 16));
        this.pos += 6;
      } else if (e !== undefined && ESCAPES[e] !== undefined) {
        out += ESCAPES[e];
        this.pos += 2;
      } else {
        this.fail(`an invalid escape in a string (offset ${this.pos})`, path);
      }
    }
    // Escapes can spell half of a surrogate pair; the text is then not Unicode and readers differ on it.
    if (!out.isWellFormed()) this.fail('a string holds an unpaired UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair)', path, 'ambiguous');
    return out;
  }

  private number(path: readonly (string | number)[]): number {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) return this.fail(`a malformed number at offset ${this.pos}`, path);
    const lexeme = match[0];
    this.pos += lexeme.length;
    const problem = this.checkNumber?.(lexeme);
    if (problem !== undefined) this.fail(`the number ${lexeme.length > 40 ? `${lexeme.slice(0, 40)}...` : lexeme} ${problem}`, path, 'ambiguous');
    return Number(lexeme);
  }
}

const NUMBER_PARTS = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/**
 * A number check for JSON that is hashed after it is read as doubles (canonical JSON, RFC 8785):
 * a number whose value is an integer must be one a double holds exactly, or two texts (2^53 and
 * 2^53 + 1) would read, and hash, the same. Fractions are not judged: every reader rounds them.
 */
export function inexactIntegerProblem(lexeme: string): string | undefined {
  const value = Number(lexeme);
  if (!Number.isFinite(value)) return 'is beyond the range of a double';
  const [, sign, whole, fraction = '', exponent = '0'] = NUMBER_PARTS.exec(lexeme)!;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let scale = Number(exponent) - fraction.length;
  if (digits === '') return undefined;
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  scale += trailing;
  if (scale < 0) return undefined;
  const exact = BigInt(digits) * 10n ** BigInt(scale);
  if (Number.isInteger(value) && BigInt(value) === (sign === '-' ? -exact : exact)) return undefined;
  return `is an integer a double cannot hold exactly (it would be read as ${value})`;
}

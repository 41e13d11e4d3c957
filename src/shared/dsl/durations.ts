// Durations as Symbiont reads them. Its extraction code (crates/dsl/src/lib.rs
// in ThirdKeyAI/Symbiont) hands `with` timeouts and memory retention to the
// `humantime` crate's parse_duration, and takes whole seconds (`as_secs`).
// Rules of that format (docs.rs/humantime, parse_duration): one or more
// `<integer><unit>` pieces, white space allowed between them; no fractions;
// a month is 30.44 days and a year 365.25 days.

const UNIT_SECONDS: [string[], number][] = [
  [['nanos', 'nsec', 'ns'], 1e-9],
  [['usec', 'us', 'µs'], 1e-6],
  [['millis', 'msec', 'ms'], 1e-3],
  [['seconds', 'second', 'secs', 'sec', 's'], 1],
  [['minutes', 'minute', 'mins', 'min', 'm'], 60],
  [['hours', 'hour', 'hrs', 'hr', 'h'], 3600],
  [['days', 'day', 'd'], 86_400],
  [['weeks', 'week', 'w'], 604_800],
  [['months', 'month', 'M'], 2_630_016],
  [['years', 'year', 'y'], 31_557_600],
];

const UNITS = new Map(UNIT_SECONDS.flatMap(([names, seconds]) => names.map((n) => [n, seconds] as const)));

/** Whole seconds of a humantime duration such as `90d` or `1h 30m`; null when it is not one. */
export function humantimeSeconds(text: string): number | null {
  const pieces = /^\s*(?:(\d+)\s*([a-zA-Zµ]+)\s*)+$/.test(text) ? text.matchAll(/(\d+)\s*([a-zA-Zµ]+)/g) : null;
  if (!pieces) return null;
  let total = 0;
  for (const [, amount, unit] of pieces) {
    const seconds = UNITS.get(unit!);
    if (seconds === undefined) return null;
    total += Number(amount) * seconds;
  }
  return Number.isSafeInteger(Math.floor(total)) ? Math.floor(total) : null;
}

/**
 * A `with` timeout in seconds, as Symbiont extracts it: surrounding quotes
 * dropped, `N.seconds`/`N.minutes`/`N.hours` read as `Ns`/`Nm`/`Nh`, then a
 * humantime duration or else a whole number of seconds. Null when invalid.
 */
export function timeoutSeconds(valueText: string): number | null {
  const text = trimQuotes(valueText);
  const suffixed = /^(.*)\.(seconds|minutes|hours)$/.exec(text);
  const normalized = suffixed ? `${suffixed[1]!.trim()}${suffixed[2]![0]}` : text;
  const duration = humantimeSeconds(normalized);
  if (duration !== null) return duration;
  return /^\+?\d+$/.test(normalized) && Number.isSafeInteger(Number(normalized)) ? Number(normalized) : null;
}

/** Rust's `trim_matches('"')`: every leading and trailing `"` goes. */
export function trimQuotes(text: string): string {
  return text.replace(/^"+|"+$/g, '');
}

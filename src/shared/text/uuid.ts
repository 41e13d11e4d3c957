// UUIDs as text. Symbiont writes them as serde's uuid crate does: lowercase, 8-4-4-4-12 hexadecimal
// digits, which is also the output form RFC 9562 (section 4) asks for. Journals, run ids and Cedar
// principals are written by software in that form, so they are checked in it exactly; only a person
// typing a run id on the command line is read leniently, by lowercasing it first (audit-command.ts).

/** The canonical text of one UUID, without anchors, for patterns that contain one. */
export const CANONICAL_UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const CANONICAL_UUID = new RegExp(`^${CANONICAL_UUID_PATTERN}$`);

/** Whether `text` is a UUID in its canonical lowercase text. */
export function isCanonicalUuid(text: unknown): text is string {
  return typeof text === 'string' && CANONICAL_UUID.test(text);
}

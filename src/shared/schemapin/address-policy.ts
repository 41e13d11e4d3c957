import net from 'node:net';

// Which IP addresses a key fetch may connect to. A key URL is caller input, so
// without these checks verify_schema would be a way to make the server send
// requests into its own network (SSRF): loopback services, the LAN, cloud
// metadata endpoints. Every address a host name resolves to is classified here
// before any connection is made.

/**
 * Why an address is refused. `local` kinds are allowed by the insecure testing
 * switch; the others (metadata, multicast, unspecified, broadcast, reserved)
 * are never contacted.
 */
export type AddressKind =
  | 'loopback'
  | 'private'
  | 'carrier-grade NAT'
  | 'link-local'
  | 'unique-local'
  | 'cloud metadata'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved';

const LOCAL_KINDS: ReadonlySet<AddressKind> = new Set(['loopback', 'private', 'carrier-grade NAT', 'link-local', 'unique-local']);

export interface AddressVerdict {
  allowed: boolean;
  /** Set when the address is not public: what kind of address it is. */
  kind: AddressKind | null;
}

/** Decides whether a key fetch may connect to `address` (an IPv4 or IPv6 literal). */
export function judgeAddress(address: string, allowInsecure: boolean): AddressVerdict {
  const kind = classifyAddress(address);
  if (kind === null) return { allowed: true, kind: null };
  return { allowed: allowInsecure && LOCAL_KINDS.has(kind), kind };
}

/** The kind of a non-public address, or null for a public unicast address. Unparseable input is 'reserved'. */
export function classifyAddress(address: string): AddressKind | null {
  const bare = stripBrackets(address);
  if (net.isIPv4(bare)) return classifyV4(parseV4(bare));
  if (net.isIPv6(bare)) return classifyV6(parseV6(bare));
  return 'reserved';
}

function stripBrackets(address: string): string {
  const unbracketed = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  // A zone index (fe80::1%eth0) only ever accompanies link-local use; classify the address part.
  const zone = unbracketed.indexOf('%');
  return zone === -1 ? unbracketed : unbracketed.slice(0, zone);
}

function parseV4(text: string): number[] {
  return text.split('.').map((part) => Number(part));
}

/** Sixteen bytes of an IPv6 literal already accepted by net.isIPv6. */
function parseV6(text: string): number[] {
  let head = text;
  let tailV4: number[] = [];
  const lastColon = head.lastIndexOf(':');
  if (head.includes('.', lastColon)) {
    // Trailing dotted quad (::ffff:1.2.3.4): two 16-bit groups.
    tailV4 = parseV4(head.slice(lastColon + 1));
    head = head.slice(0, lastColon + 1) + '0:0';
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const groupsOf = (part: string | undefined): number[] =>
    part
      ? part
          .split(':')
          .filter((g) => g !== '')
          .map((g) => parseInt(g, 16))
      : [];
  const leftGroups = groupsOf(left);
  const rightGroups = groupsOf(right);
  const fill = right === undefined ? 0 : 8 - leftGroups.length - rightGroups.length;
  const groups = [...leftGroups, ...new Array<number>(fill).fill(0), ...rightGroups];
  const bytes: number[] = [];
  for (const g of groups) bytes.push((g >> 8) & 0xff, g & 0xff);
  if (tailV4.length === 4) bytes.splice(12, 4, ...tailV4);
  return bytes;
}

function inV4(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < bits; i += 1) {
    const byte = Math.floor(i / 8);
    const mask = 0x80 >> (i % 8);
    if (((bytes[byte] ?? 0) & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

// Cloud metadata endpoints are matched exactly and before the ranges they sit in,
// so the refusal names them for what they are.
const V4_METADATA = ['169.254.169.254', '100.100.100.200', '168.63.129.16'];

const V4_RANGES: ReadonlyArray<{ prefix: number[]; bits: number; kind: AddressKind }> = [
  { prefix: [0, 0, 0, 0], bits: 32, kind: 'unspecified' },
  { prefix: [255, 255, 255, 255], bits: 32, kind: 'broadcast' },
  { prefix: [0], bits: 8, kind: 'reserved' }, // "this network"
  { prefix: [127], bits: 8, kind: 'loopback' },
  { prefix: [10], bits: 8, kind: 'private' },
  { prefix: [172, 16], bits: 12, kind: 'private' },
  { prefix: [192, 168], bits: 16, kind: 'private' },
  { prefix: [100, 64], bits: 10, kind: 'carrier-grade NAT' },
  { prefix: [169, 254], bits: 16, kind: 'link-local' },
  { prefix: [192, 0, 0], bits: 24, kind: 'reserved' }, // IETF protocol assignments
  { prefix: [192, 0, 2], bits: 24, kind: 'reserved' }, // documentation
  { prefix: [198, 18], bits: 15, kind: 'reserved' }, // benchmarking
  { prefix: [198, 51, 100], bits: 24, kind: 'reserved' }, // documentation
  { prefix: [203, 0, 113], bits: 24, kind: 'reserved' }, // documentation
  { prefix: [224], bits: 4, kind: 'multicast' },
  { prefix: [240], bits: 4, kind: 'reserved' },
];

function classifyV4(bytes: readonly number[]): AddressKind | null {
  if (V4_METADATA.includes(bytes.join('.'))) return 'cloud metadata';
  for (const range of V4_RANGES) if (inV4(bytes, range.prefix, range.bits)) return range.kind;
  return null;
}

const V6_METADATA = ['fd00:ec2::254'].map(parseV6);

function classifyV6(bytes: readonly number[]): AddressKind | null {
  const same = (other: readonly number[]) => other.every((b, i) => b === bytes[i]);
  const zeroUpTo = (n: number) => bytes.slice(0, n).every((b) => b === 0);
  const v4Embedded = (offset: number): AddressKind | null => classifyV4(bytes.slice(offset, offset + 4));

  if (V6_METADATA.some(same)) return 'cloud metadata';
  if (zeroUpTo(16)) return 'unspecified';
  if (zeroUpTo(15) && bytes[15] === 1) return 'loopback';
  // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d reach the IPv4 address.
  if (zeroUpTo(10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4Embedded(12);
  if (zeroUpTo(12)) return v4Embedded(12) ?? 'reserved';
  // NAT64 well-known prefix 64:ff9b::/96 translates to the embedded IPv4 address.
  if (inV4(bytes, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96)) return v4Embedded(12);
  if (inV4(bytes, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48)) return 'reserved'; // local-use NAT64
  // 6to4 2002:a.b.c.d::/48 carries an IPv4 address in bits 16-48.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4Embedded(2);
  if (inV4(bytes, [0x20, 0x01, 0x00, 0x00], 32)) return 'reserved'; // Teredo hides its IPv4 address
  if (inV4(bytes, [0x20, 0x01, 0x0d, 0xb8], 32)) return 'reserved'; // documentation
  if (inV4(bytes, [0x01, 0x00, 0, 0, 0, 0, 0, 0], 64)) return 'reserved'; // discard-only
  if (inV4(bytes, [0xfe, 0x80], 10)) return 'link-local';
  if (inV4(bytes, [0xfe, 0xc0], 10)) return 'private'; // deprecated site-local
  if (inV4(bytes, [0xfc], 7)) return 'unique-local';
  if (bytes[0] === 0xff) return 'multicast';
  return null;
}

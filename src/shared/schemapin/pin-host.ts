import net from 'node:net';
import { domainToASCII } from 'node:url';
import { SchemaPinInputError } from './schemapin-errors.js';

// The trust-on-first-use key of a key host: one spelling per host, so a key
// URL cannot start a fresh pin (and sidestep a mismatch) by spelling the same
// host another way. The WHATWG URL parser already lower-cases names, applies
// IDNA and writes IPv4 and IPv6 addresses canonically; on top of that a
// trailing dot is dropped (example.com. is example.com) and an IPv4-mapped
// IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address it reaches. The
// port in the key is the one the fetch dials (keyUrlPort): a bare host means
// 443, so https://h, https://h:443 and h are one pin, and http://h (port 80)
// is h:80. Port 0 is refused: Node.js would dial the scheme's default port
// while the URL names another. Pin store keys, and hosts typed on the command
// line, go through the same function, so pins written in an older spelling
// still match.

const HTTPS_PORT = 443;
const HTTP_PORT = 80;

/** The TCP port a fetch of this key URL dials; throws SchemaPinInputError for port 0, which no key server listens on. */
export function keyUrlPort(url: URL): number {
  if (url.port === '') return url.protocol === 'http:' ? HTTP_PORT : HTTPS_PORT;
  const port = Number(url.port);
  if (port === 0) throw new SchemaPinInputError("public_key_url names port 0, which cannot be dialled; give the key server's port, or none for the default");
  return port;
}

/** The pin key of a key URL: its normalized host, plus ":port" when the dialled port is not 443. */
export function pinHostOf(url: URL): string {
  const port = keyUrlPort(url);
  return port === HTTPS_PORT ? normalizeHostname(url.hostname) : `${normalizeHostname(url.hostname)}:${port}`;
}

/**
 * The pin key for host text as stored in pins.json or typed by a user
 * ("Example.COM.", "[::ffff:1.2.3.4]:8443", "bücher.example"). Text that is
 * not a host is only lower-cased, so it still names its own pin.
 */
export function normalizePinHost(text: string): string {
  let url: URL;
  try {
    // Parsed as an https authority: the same rules as a key URL's host, and 443 is the default port.
    url = new URL(`https://${text}/`);
  } catch {
    return text.toLowerCase();
  }
  if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') return text.toLowerCase();
  // Port 0 names no pin that could exist; the text keeps its own spelling.
  return url.port === '0' ? text.toLowerCase() : pinHostOf(url);
}

function normalizeHostname(hostname: string): string {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (net.isIPv6(bare)) {
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(canonicalIPv6(bare));
    if (mapped) {
      const high = parseInt(mapped[1]!, 16);
      const low = parseInt(mapped[2]!, 16);
      return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
    }
    return `[${canonicalIPv6(bare)}]`;
  }
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  if (net.isIPv4(name)) return name;
  return domainToASCII(name) || name;
}

/** RFC 5952 text of an IPv6 address, as the URL serializer writes it (::ffff:1.2.3.4 becomes ::ffff:102:304). */
function canonicalIPv6(address: string): string {
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address.toLowerCase(); // a zone index (fe80::1%eth0), which URLs cannot carry
  }
}

// Which Ed25519 public keys and signatures are acceptable at all, before any
// signature is checked: the rules libsodium's crypto_sign_verify_detached
// applies and OpenSSL (Node.js crypto) and tweetnacl do not. A public key of
// small order (the identity, for one) "verifies" signatures nobody made: with
// the identity as key, R = identity and S = 0 verify any message in both
// implementations this project uses. So a key is refused when its encoding is
// not canonical (y >= p, or x = 0 written with the sign bit set), when it is
// not a point of the curve, or when the point has small order; a signature is
// refused when S >= L or R has small order. Ed25519 itself is RFC 8032.

const P = 2n ** 255n - 19n;
/** The order of the prime subgroup: S must be below it (RFC 8032, section 5.1.7). */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const mod = (a: bigint): bigint => ((a % P) + P) % P;
function power(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
  }
  return result;
}
const inverse = (a: bigint): bigint => power(a, P - 2n);
const D = mod(-121665n * inverse(121666n));
const SQRT_MINUS_ONE = power(2n, (P - 1n) / 4n);

/** y of the two points of order 8 up to sign (the other pair has y = p - this). */
const ORDER_8_Y = 0x7a03ac9277fdc74ec6cc392cfa53202a0f67100d760b3cba4fd84d3d706a17c7n;

/**
 * The y values (sign bit ignored) of every encoding of a point of order 1, 2, 4 or 8, as libsodium
 * blocks them: the eight small-order points have y in {1, p-1, 0, ±ORDER_8_Y}, and y = p and p + 1
 * are non-canonical spellings of 0 and 1.
 */
const SMALL_ORDER_Y = new Set<bigint>([0n, 1n, P - 1n, ORDER_8_Y, P - ORDER_8_Y, P, P + 1n]);

function littleEndian(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
}

/** The y coordinate an encoding spells (bit 255, the sign of x, cleared), not reduced mod p. */
function encodedY(encoding: Uint8Array): bigint {
  return littleEndian(encoding) & ((1n << 255n) - 1n);
}

/** True when the 32-byte encoding spells a point of small order, canonical or not (the sign bit is ignored). */
function isSmallOrderEncoding(encoding: Uint8Array): boolean {
  return SMALL_ORDER_Y.has(encodedY(encoding));
}

/** Decodes a point as RFC 8032 section 5.1.3 does; null when the encoding is not canonical or not on the curve. */
function decodePoint(encoding: Uint8Array): { x: bigint; y: bigint } | null {
  if (encoding.length !== 32) return null;
  const y = encodedY(encoding);
  const xSign = (encoding[31]! >> 7) & 1;
  if (y >= P) return null;
  const u = mod(y * y - 1n);
  const v = mod(D * y * y + 1n);
  let x = mod(u * power(v, 3n) * power(u * power(v, 7n), (P - 5n) / 8n));
  const vx2 = mod(v * x * x);
  if (vx2 !== u) {
    if (vx2 !== mod(-u)) return null;
    x = mod(x * SQRT_MINUS_ONE);
  }
  if (x === 0n && xSign === 1) return null;
  if (Number(x & 1n) !== xSign) x = P - x;
  return { x, y };
}

/** Why `raw` (32 bytes) is not an acceptable Ed25519 public key, or undefined when it is. */
export function ed25519PublicKeyProblem(raw: Uint8Array): string | undefined {
  if (raw.length !== 32) return `an Ed25519 public key is 32 bytes, not ${raw.length}`;
  if (encodedY(raw) >= P) return 'the public key is not a canonical encoding (its y coordinate is not below 2^255-19)';
  if (isSmallOrderEncoding(raw)) return 'the public key is a point of small order, which verifies signatures nobody made';
  if (decodePoint(raw) === null) return 'the public key is not a point of the Ed25519 curve';
  return undefined;
}

/** Why a 64-byte signature is refused before verification (S >= L, or R of small order), or undefined. */
export function ed25519SignatureProblem(signature: Uint8Array): string | undefined {
  if (signature.length !== 64) return `an Ed25519 signature is 64 bytes, not ${signature.length}`;
  if (littleEndian(signature.subarray(32)) >= L) return 'the signature is not canonical (S is not below the group order L)';
  if (isSmallOrderEncoding(signature.subarray(0, 32))) return "the signature's R is a point of small order";
  return undefined;
}

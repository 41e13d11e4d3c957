import { createPrivateKey, sign, verify, type KeyObject } from 'node:crypto';
import { SchemaPinInputError } from './schemapin-errors.js';

// ECDSA P-256 over SHA-256 with DER-encoded signatures: the SchemaPin signature
// scheme. The signed bytes are the schema's canonical JSON in UTF-8.

export const SCHEMAPIN_ALGORITHM = 'ECDSA_P256';

/** True when `signature` (DER) is a valid signature of `canonical` by `key`. Never throws on malformed signatures. */
export function verifySchemaSignature(canonical: string, signature: Buffer, key: KeyObject): boolean {
  try {
    return verify('sha256', Buffer.from(canonical, 'utf8'), { key, dsaEncoding: 'der' }, signature);
  } catch {
    return false;
  }
}

/** Base64 DER signature of `canonical` by an EC P-256 private key. */
export function signCanonicalSchema(canonical: string, privateKey: KeyObject): string {
  return sign('sha256', Buffer.from(canonical, 'utf8'), { key: privateKey, dsaEncoding: 'der' }).toString('base64');
}

/** Loads a PEM EC P-256 private key (PKCS#8 or SEC1), refusing other key types with a one-line reason. */
export function loadSigningKey(pem: string, shown: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new SchemaPinInputError(`${shown}: not an unencrypted PEM private key; expected an EC P-256 private key (openssl ecparam -name prime256v1 -genkey)`);
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    const what =
      key.asymmetricKeyType === 'ec'
        ? `an EC key on ${key.asymmetricKeyDetails?.namedCurve ?? 'an unknown curve'}`
        : `an ${String(key.asymmetricKeyType).toUpperCase()} key`;
    throw new SchemaPinInputError(`${shown}: is ${what}; SchemaPin signatures need an EC P-256 (prime256v1) private key`);
  }
  return key;
}

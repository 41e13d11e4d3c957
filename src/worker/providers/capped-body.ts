import { ProviderError } from './provider-error.js';

/**
 * Reads a response body while counting bytes, and stops (calling `stop`, which must close the
 * connection) the moment the running total passes `cap`, so an endless or huge body is never held.
 */
export async function readCappedBody(response: Response, cap: number, stop: () => void): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > cap) {
    stop();
    throw new ProviderError(`the provider response declares ${declared} bytes; the limit is ${cap} bytes`, 'oversize');
  }
  if (response.body === null) return new Uint8Array(0);

  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      stop();
      reader.cancel().catch(() => undefined);
      throw new ProviderError(`the provider response exceeded the limit of ${cap} bytes; reading stopped`, 'oversize');
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return joined;
}

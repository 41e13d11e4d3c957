import type { IncomingMessage } from 'node:http';
import { ProviderError } from './provider-error.js';

/**
 * Reads a response body while counting bytes, and stops (calling `stop`, which must close the
 * connection) the moment the running total passes `cap`, so an endless or huge body is never held.
 */
export function readCappedBody(response: IncomingMessage, cap: number, stop: () => void): Promise<Buffer> {
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > cap) {
    stop();
    return Promise.reject(new ProviderError(`the provider response declares ${declared} bytes; the limit is ${cap} bytes`, 'oversize'));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      response.off('data', onData);
      outcome();
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.byteLength;
      if (total > cap) {
        stop();
        settle(() => reject(new ProviderError(`the provider response exceeded the limit of ${cap} bytes; reading stopped`, 'oversize')));
        return;
      }
      chunks.push(chunk);
    };
    response.on('data', onData);
    response.once('end', () => settle(() => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total))));
    response.on('error', (error) => settle(() => reject(error)));
    // A body cut short by the peer ends in 'close' without 'end'.
    response.once('close', () => settle(() => reject(Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' }))));
  });
}

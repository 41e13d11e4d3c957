export type ProviderErrorKind = 'http' | 'malformed' | 'oversize' | 'network' | 'aborted';

/** A provider call that produced no usable response. Messages never carry the API key or more than a short body excerpt. */
export class ProviderError extends Error {
  override readonly name = 'ProviderError';

  constructor(
    message: string,
    readonly kind: ProviderErrorKind,
    /** The HTTP status for kind 'http'. */
    readonly status?: number,
  ) {
    super(message);
  }
}

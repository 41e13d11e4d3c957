import os from 'node:os';
import { PROVIDER_KINDS, PROVIDERS, WIRE_FORMAT_NAMES, type ProviderKind, type WireFormat } from '../../src/shared/provider/provider-kinds.js';

// A server environment for any provider kind, read from its declaration, so a suite that runs once
// per kind or wire format gets a new one without being told: SYMBI_PROVIDER, the first key variable,
// the base URL variable (the synthetic endpoint's origin answers every wire format's path) and the
// first model variable.

/** The model name a kind's test server asks for. */
export const testModel = (kind: ProviderKind): string => `${kind}-test-model`;

/** The environment that selects `kind` against the synthetic endpoint at `origin`, with `key`, plus `extra`. */
export function kindEnv(kind: ProviderKind, origin: string, key: string, extra: Record<string, string> = {}): Record<string, string> {
  const declared = PROVIDERS[kind];
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    SYMBI_PROVIDER: kind,
    [declared.keyVariables[0]]: key,
    [declared.baseUrlVariable]: origin,
    [declared.modelVariables[0]]: testModel(kind),
    ...extra,
  };
}

/** One provider kind per wire format (the first declared that speaks it): enough to run a wire format's cases. */
export const KIND_PER_WIRE: readonly (readonly [WireFormat, ProviderKind])[] = WIRE_FORMAT_NAMES.map(
  (wire) => [wire, PROVIDER_KINDS.find((kind) => PROVIDERS[kind].wire === wire)!] as const,
);

// The one place that loads the Cedar wasm module. The Node.js build is synchronous and
// instantiates its wasm when first required, so every thread that uses this module
// (the supervisor and each worker) pays that cost once.
import { createRequire } from 'node:module';
import { turnOffUnsafeJsToWasmInlining } from './wasm-call-inlining.js';
import { keepWasmInBaselineCompiler } from './wasm-tiering.js';

type CedarModule = typeof import('@cedar-policy/cedar-wasm/nodejs');
let loaded: CedarModule | undefined;

// Loaded on first use: a server whose project has no policy files never needs
// Cedar in the supervisor thread, and startup should not pay for the wasm.
export const cedar: CedarModule = new Proxy({} as CedarModule, {
  get(_target, property) {
    if (loaded === undefined) {
      // V8 flags that must be set before Cedar's wasm is compiled or called: see each module.
      turnOffUnsafeJsToWasmInlining();
      keepWasmInBaselineCompiler();
      loaded = createRequire(import.meta.url)('@cedar-policy/cedar-wasm/nodejs') as CedarModule;
    }
    return loaded[property as keyof CedarModule];
  },
});

export type {
  AuthorizationAnswer,
  DetailedError,
  EntityJson,
  PartialAuthorizationAnswer,
  ResidualResponse,
  ValidationAnswer,
} from '@cedar-policy/cedar-wasm/nodejs';

/** The Cedar version compiled into the wasm module, for diagnostics. */
export function cedarVersion(): string {
  return cedar.getCedarVersion();
}

// The one place that loads the Cedar wasm module. The Node.js build is synchronous and
// instantiates its wasm when first imported, so every thread that imports this module
// (the supervisor and each worker) pays that cost once.
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';

export type {
  AuthorizationAnswer,
  DetailedError,
  EntityJson,
  PartialAuthorizationAnswer,
  ResidualResponse,
  ValidationAnswer,
} from '@cedar-policy/cedar-wasm/nodejs';

export { cedar };

/** The Cedar version compiled into the wasm module, for diagnostics. */
export function cedarVersion(): string {
  return cedar.getCedarVersion();
}

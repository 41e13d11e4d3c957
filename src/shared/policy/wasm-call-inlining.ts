// Keeps Node's optimising compiler from inlining JS-to-Wasm calls on the V8 versions where a
// lazy deoptimisation of such a call aborts the whole process.
//
// Cedar's exports take and return `externref` (wasm-bindgen passes JS values directly).
// TurboFan inlines the JS-to-Wasm call into an optimised caller such as the package's own
// `isAuthorized` glue. If that caller's code is invalidated while the Wasm function runs (a
// lazy deopt), V8 rebuilds the call's result from the return register by its Wasm type; V8
// before 13.6 knows only i32, i64, f32 and f64 there and reaches `UNREACHABLE()` for a
// reference (Deoptimizer::TranslatedValueForWasmReturnKind): SIGTRAP, "# Fatal error in ,
// line 0 # unreachable code", every MCP caller left waiting. Node 20 (V8 11.3) and Node 22
// (V8 12.4) are affected, Node 24 (V8 13.6) is not; test/process/wasm-deopt-guard.test.ts shows both
// the abort and the fix with Cedar itself, on a worker thread.
//
// V8 flags are process-wide, so turning the inlining off once covers the supervisor and every
// worker thread; it must happen before any thread has optimised code that inlined a Cedar
// call, which is why cedar-engine.ts calls this right before it loads the module. The cost is
// a generic JS-to-Wasm wrapper on each Cedar call, small against the decision itself.
import v8 from 'node:v8';

/** The first V8 version whose deoptimiser rebuilds a reference-typed Wasm result. */
const FIRST_SAFE_V8: readonly [number, number] = [13, 6];

/** Whether this V8 (process.versions.v8, e.g. "11.3.244.8-node.38") has the abort. */
export function jsToWasmInliningIsUnsafe(v8Version: string = process.versions.v8): boolean {
  const [major = 0, minor = 0] = v8Version.split('.').map((part) => Number.parseInt(part, 10));
  return major < FIRST_SAFE_V8[0] || (major === FIRST_SAFE_V8[0] && minor < FIRST_SAFE_V8[1]);
}

let applied = false;

/** Turns JS-to-Wasm call inlining off for the whole process where it is unsafe; idempotent per thread. */
export function turnOffUnsafeJsToWasmInlining(): void {
  if (applied) return;
  applied = true;
  if (jsToWasmInliningIsUnsafe()) v8.setFlagsFromString('--no-turbo-inline-js-wasm-calls');
}

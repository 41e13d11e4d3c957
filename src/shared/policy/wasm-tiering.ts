// Keeps Cedar's wasm in V8's baseline compiler (Liftoff) unless a function is very hot.
//
// With V8's default tiering, a Wasm function is recompiled by the optimising compiler once it
// has run about 1.8 MB worth of code. Cedar is a 4.3 MB module, and loading the policies at
// startup (parse, schema validation) runs enough of it to send many large functions there.
// Those compilations peak at about 60 MB of compiler memory per thread; the memory is freed but
// the C allocator keeps most of it, so it stays in the process's RSS for the rest of the day.
// Measured on Node 20.20.2 (load, parse and validate the quickstart policy): 137 MB RSS with
// the default budget, 63 MB with this one; on Node 22 and 24, 94 MB against 61 and 66 MB.
//
// The price is paid per decision: a Cedar respond decision takes about 0.55 ms p50 instead of
// 0.29 ms in scripts/bench-policy.ts, on an invocation whose round trip is about 4.5 ms.
// Functions hot enough to exhaust this budget are still optimised.
//
// V8 flags are process-wide; set before the first thread loads Cedar (cedar-engine.ts calls
// this right before), the budget applies to every thread's instance.
import v8 from 'node:v8';

/** Per-function execution budget before optimising (V8's default is 1,800,000). */
export const CEDAR_WASM_TIERING_BUDGET = 2_000_000_000;

let applied = false;

/** Raises V8's Wasm tiering budget for the whole process; idempotent per thread. */
export function keepWasmInBaselineCompiler(): void {
  if (applied) return;
  applied = true;
  v8.setFlagsFromString(`--wasm-tiering-budget=${CEDAR_WASM_TIERING_BUDGET}`);
}

// Keeps Cedar's wasm in V8's baseline compiler (Liftoff) unless a function is very hot.
//
// With V8's default tiering, a Wasm function is recompiled by the optimising compiler once it
// has run a modest budget of code. Cedar is a large module, and loading the policies at startup
// (parse, schema validation) runs enough of it to send many large functions there. Those
// compilations take tens of megabytes of compiler memory; the memory is freed but the C
// allocator keeps most of it, so it stays in the process's RSS for the rest of the day. The
// price is paid per decision, which runs slower in Liftoff code; docs/benchmarks.md has both
// sides (the Cedar decision figure, and the idle and soak RSS figures).
//
// V8 flags are process-wide; set before Cedar's wasm is compiled (cedar-engine.ts calls this
// right before), the budget applies to every thread's instance.
import v8 from 'node:v8';

/** Per-function execution budget before optimising (V8's default is far lower). */
const CEDAR_WASM_TIERING_BUDGET = 2_000_000_000;

let applied = false;

/** Raises V8's Wasm tiering budget for the whole process; idempotent per thread. */
export function keepWasmInBaselineCompiler(): void {
  if (applied) return;
  applied = true;
  v8.setFlagsFromString(`--wasm-tiering-budget=${CEDAR_WASM_TIERING_BUDGET}`);
}

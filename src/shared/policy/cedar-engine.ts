// The one place that loads Cedar's WebAssembly. The wasm is compiled once per process: the
// thread that first needs Cedar (the supervisor, when the project has policy files) compiles it,
// and worker threads instantiate the compiled module they receive in their boot data
// (useCompiledCedar), so no thread compiles it again and all of them share its machine code.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as cedarGlue from '@cedar-policy/cedar-wasm/web';
import { turnOffUnsafeJsToWasmInlining } from './wasm-call-inlining.js';
import { keepWasmInBaselineCompiler } from './wasm-tiering.js';

type CedarModule = typeof cedarGlue;
let instantiated = false;
let compiled: WebAssembly.Module | undefined;

/** Sets the V8 flags that must hold before Cedar's wasm is compiled or called: see each module. */
function setCedarFlags(): void {
  turnOffUnsafeJsToWasmInlining();
  keepWasmInBaselineCompiler();
}

/** The compiled Cedar module, compiled on first use; a worker thread can receive it in its boot data. */
export function compiledCedarModule(): WebAssembly.Module {
  if (compiled === undefined) {
    setCedarFlags();
    // The package exports the web build for `import` only; its wasm sits beside the Node.js build's entry.
    const nodeEntry = createRequire(import.meta.url).resolve('@cedar-policy/cedar-wasm/nodejs');
    const wasmPath = path.join(path.dirname(nodeEntry), '..', 'web', 'cedar_wasm_bg.wasm');
    compiled = new WebAssembly.Module(fs.readFileSync(wasmPath));
  }
  return compiled;
}

/** Instantiates Cedar in this thread from a module another thread compiled; call before the first decision. */
export function useCompiledCedar(module: WebAssembly.Module): void {
  if (instantiated) return;
  compiled = module;
  setCedarFlags();
  cedarGlue.initSync({ module });
  instantiated = true;
}

// Instantiated on first use: a server whose project has no policy files never needs
// Cedar in the supervisor thread, and startup should not pay for the wasm.
export const cedar: CedarModule = new Proxy({} as CedarModule, {
  get(_target, property) {
    if (!instantiated) useCompiledCedar(compiledCedarModule());
    return cedarGlue[property as keyof CedarModule];
  },
});

export type { DetailedError, EntityJson } from '@cedar-policy/cedar-wasm/web';

// The server lives all day beside other MCP servers in an IDE, so its memory should stay
// near its live size rather than grow for throughput. `--optimize-for-size` makes V8 collect
// sooner and keep heaps small: in the main thread from now on, and in every worker thread
// started after it (with small young generations). Its effect on the soak's peak RSS and call
// rate is in docs/benchmarks.md.
import v8 from 'node:v8';
import { loadKoffi } from '../../shared/confinement/index.js';

/** Asks V8 to favour a small heap over allocation speed, process-wide; call before the worker threads start. */
export function preferSmallHeaps(): void {
  v8.setFlagsFromString('--optimize-for-size');
}

type MallocTrim = (pad: number) => number;
let mallocTrim: MallocTrim | null | undefined;

/**
 * Gives the C allocator's free memory back to the system: glibc's malloc_trim(0), through koffi
 * (already loaded for the confinement route); nothing where there is no such function. Compiling
 * Cedar's WebAssembly and starting a worker thread leave megabytes free inside glibc's heaps,
 * which it would keep for reuse all day; called each time a worker thread has started, which is
 * when that has just happened. Its effect on the idle RSS is in docs/benchmarks.md.
 */
export function returnFreedMemoryToSystem(): void {
  if (mallocTrim === undefined) {
    try {
      if (process.platform !== 'linux') throw new Error("malloc_trim is glibc's");
      mallocTrim = loadKoffi().load(null).func('int malloc_trim(size_t)') as MallocTrim;
    } catch {
      mallocTrim = null;
    }
  }
  mallocTrim?.(0);
}

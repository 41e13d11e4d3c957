// The server lives all day beside other MCP servers in an IDE, so its V8 heaps should stay
// near their live size rather than grow for throughput. `--optimize-for-size` makes V8 collect
// sooner and keep heaps small: in the main thread from now on, and in every worker thread
// started after it (with small young generations). Its effect on the soak's peak RSS and call
// rate is in docs/benchmarks.md.
import v8 from 'node:v8';

/** Asks V8 to favour a small heap over allocation speed, process-wide; call before the worker threads start. */
export function preferSmallHeaps(): void {
  v8.setFlagsFromString('--optimize-for-size');
}

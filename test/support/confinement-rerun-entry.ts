// The one process of a confinement rerun (test/process/confinement-routes.test.ts): it loads each
// suite named on its command line, in order, so node:test runs their tests one after another here.
// The suites are named as arguments of this script, not as `--import` options: a worker thread
// takes the process's options, and would load every suite again.

for (const suite of process.argv.slice(2)) await import(suite);

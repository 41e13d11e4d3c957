import { createRequire } from 'node:module';

// node:http and node:https, loaded as CommonJS. Node.js 22 builds node:http's ES module facade by
// reading every export, the lazy `WebSocket` getter included, which loads undici and compiles its
// WebAssembly: under `node --jitless` (no WebAssembly) a plain `import http from 'node:http'`
// throws, and in a worker thread that ended the process. Required as CommonJS, no facade is built.
const require = createRequire(import.meta.url);

export const http = require('node:http') as typeof import('node:http');
export const https = require('node:https') as typeof import('node:https');

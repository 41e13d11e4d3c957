#!/usr/bin/env node
// The command-line entry (`symbi`, and `symbi-mcp` for `npx -y symbi-mcp ...`):
// it runs the bundled bundle/supervisor/cli.js. A published package ships
// bundle/ (built by `prepack`); a clone builds it with `npm run build`.
import { existsSync } from 'node:fs';

const cli = new URL('../bundle/supervisor/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('symbi: the package is not built (bundle/supervisor/cli.js is missing); run npm run build in the symbi-mcp folder\n');
  process.exit(1);
}
await import(cli.href);

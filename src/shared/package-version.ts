import { readFileSync } from 'node:fs';

// The one place the version comes from: this package's own package.json, read
// relative to this module. From src/shared (tsx), dist/shared (tsc) and any
// file of bundle/ (the package, also installed under node_modules/symbi-mcp;
// scripts/build-bundle.ts keeps every file two levels down) it is two
// folders up, and npm always ships package.json, so `symbi --version` and the
// MCP serverInfo.version can never drift apart from what was published.

/** The package's root folder (a clone, or node_modules/symbi-mcp), where package.json, bin/ and examples/ are. */
export const packageRootUrl = new URL('../../', import.meta.url);
const manifestUrl = new URL('package.json', packageRootUrl);

function readPackageVersion(): string {
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(manifestUrl, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read the package manifest ${manifestUrl.pathname}: ${(error as Error).message}`);
  }
  const version = (manifest as { version?: unknown } | null)?.version;
  if (typeof version !== 'string' || version.length === 0) {
    throw new Error(`the package manifest ${manifestUrl.pathname} has no "version" string`);
  }
  return version;
}

export const packageVersion: string = readPackageVersion();

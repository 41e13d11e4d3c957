import fs from 'node:fs';

// The package's version, read once from package.json (two folders up from both src/shared and
// dist/shared), so the User-Agent and anything else that names the version agree with the release.

function readPackageVersion(): string {
  try {
    const parsed = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof parsed.version === 'string' && /^[0-9A-Za-z.+-]{1,64}$/.test(parsed.version) ? parsed.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export const PACKAGE_VERSION = readPackageVersion();

// The testing switch that lets key fetches use http: and loopback/private
// addresses. It is read once at the boundary (tool registration, CLI start)
// and passed down explicitly, so library code never consults the environment.

const SCHEMAPIN_INSECURE_ENV = 'SYMBIONT_SCHEMAPIN_ALLOW_INSECURE';

export function schemapinInsecureFromEnv(env: NodeJS.ProcessEnv): boolean {
  return env[SCHEMAPIN_INSECURE_ENV] === '1';
}

export function insecureWarning(): string {
  return `warning: ${SCHEMAPIN_INSECURE_ENV}=1 is set: verify_schema fetches keys over plain http and from loopback and private addresses; use this for local tests only`;
}

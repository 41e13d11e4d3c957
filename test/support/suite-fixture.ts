import { after, before } from 'node:test';
import { makeProject, removeProject, tempDir } from './project.js';
import { startSyntheticEndpoint, type SyntheticEndpoint } from './synthetic-endpoint.js';

// What the tests of one describe share: a synthetic endpoint, a project, scratch folders. Each is
// made before the describe's first test and removed after its last, from the hooks registered here.

/** The shared parts, readable from the describe's tests once its `before` hooks have run. */
export interface SuiteFixture {
  readonly endpoint: SyntheticEndpoint;
  readonly project: string;
}

/**
 * A synthetic endpoint for the enclosing describe (every answer it still holds is released before
 * it closes) and, given `files`, a project holding them.
 */
export function suiteFixture(files?: Record<string, string | Uint8Array>): SuiteFixture {
  let endpoint: SyntheticEndpoint | undefined;
  let project: string | undefined;
  before(async () => {
    endpoint = await startSyntheticEndpoint();
    if (files !== undefined) project = makeProject(files);
  });
  after(async () => {
    endpoint?.releaseAll();
    await endpoint?.close();
    if (project !== undefined) removeProject(project);
  });
  return {
    get endpoint() {
      if (endpoint === undefined) throw new Error('the suite endpoint is started by the describe’s before hook');
      return endpoint;
    },
    get project() {
      if (project === undefined) throw new Error('the suite project is made by the describe’s before hook, from the files given');
      return project;
    },
  };
}

/** Fresh scratch folders for the enclosing describe, named from `prefix`, all removed after its tests. */
export function suiteScratch(prefix: string): () => string {
  const made: string[] = [];
  after(() => {
    for (const dir of made) removeProject(dir);
  });
  return () => {
    const dir = tempDir(prefix);
    made.push(dir);
    return dir;
  };
}

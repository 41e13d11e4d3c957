import fs from 'node:fs';
import readline from 'node:readline';
import { PinnedDirectory } from '../../src/shared/confinement/index.js';
import { checkDescriptorAccess } from '../../src/shared/confinement/route-choice.js';
import { closeAuditStorage, openAuditStorage } from '../../src/shared/storage/audit-storage.js';

// One racer of test/process/signing-key-race.test.ts: a real process that proves its
// confinement route once, then, for each project path read from standard
// input, opens that project's audit storage as a server's startup does
// (creating .symbiont/ and the signing key when absent) and answers one JSON
// line: the public key it would sign with and whether it created the key, or
// the refusal. The test writes one path to every racer at once.

const access = checkDescriptorAccess();
if (!access.available) {
  process.stdout.write(`${JSON.stringify({ error: access.reason })}\n`);
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ ready: access.route.name })}\n`);

for await (const project of readline.createInterface({ input: process.stdin })) {
  let answer: Record<string, unknown>;
  const fd = fs.openSync(project, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    const storage = openAuditStorage(PinnedDirectory.withAccess(fd, project, access));
    answer = { key: storage.signingKey.publicKeyHex, created: storage.pinnedKey.created === true };
    storage.pinnedKey.seed.fill(0);
    closeAuditStorage(storage);
  } catch (err) {
    answer = { error: (err as Error).message };
  } finally {
    fs.closeSync(fd);
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

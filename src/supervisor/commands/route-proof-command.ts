import type { Command } from 'commander';
import { proveRouteHere, ROUTE_PROOF_COMMAND } from '../../shared/confinement/index.js';
import { ACL_PROOF_SUBJECT, proveAclReaderHere } from '../../shared/storage/directory-acl.js';

// `symbi route-proof <route>` (hidden): the child process in which the server
// proves an FFI confinement route, or with `acl` the ACL reader's calls, before
// calling into them (src/shared/confinement/route-proof.ts). It prints one JSON
// line on standard output, {"ok":true} or {"ok":false,"reason":"..."}; a crash
// or a hang is the parent's to see.

/** Adds the hidden `symbi route-proof` to the command line. */
export function registerRouteProofCommand(program: Command): void {
  program
    .command(`${ROUTE_PROOF_COMMAND} <route>`, { hidden: true })
    .description('prove a confinement route, or the ACL reader (acl), in this process (used by the server in a child process)')
    .action((route: string) => {
      const answer = route === ACL_PROOF_SUBJECT ? proveAclReaderHere() : proveRouteHere(route);
      process.stdout.write(`${JSON.stringify(answer)}\n`);
    });
}

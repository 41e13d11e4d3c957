import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeProject, removeProject, tempDir } from '../support/project.js';
import { suiteScratch } from '../support/suite-fixture.js';
import { serverEnv, startServer, textOf, waitForStderr, type RunningServer } from '../support/server.js';
import { namespaceSkip } from '../support/mount-namespace.js';
import { builtModule } from '../support/server-entry.js';
import { routeSkip } from '../support/route-required.js';

// An FFI route is proven in a child process before the server calls into it
// (src/shared/confinement/route-proof.ts). These tests stand in for a wrong
// symbol, signature or layout on an unseen platform with real C libraries
// preloaded into the server (LD_PRELOAD), built here with gcc: a fdopendir that
// crashes or hangs, an openat or mkdirat that ignores the mode it is given, an
// fcntl that fails. Each must cost only that route, named on standard error.
// The ACL reader (src/shared/storage/directory-acl.ts) is proven the same way:
// an lgetxattr that crashes, or fails with no errno, costs the ownership check
// (the project's directories are refused with the reason), never the server.

const PRELOADS: Record<string, string> = {
  'crash-fdopendir': `#include <dirent.h>
#include <signal.h>
DIR *fdopendir(int fd) { (void)fd; raise(SIGSEGV); return 0; }
`,
  'hang-fdopendir': `#include <dirent.h>
#include <unistd.h>
DIR *fdopendir(int fd) { (void)fd; for (;;) pause(); }
`,
  'mkdirat-ignores-mode': `#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/stat.h>
int mkdirat(int fd, const char *path, mode_t mode) {
  int (*real)(int, const char *, mode_t) = (int (*)(int, const char *, mode_t))dlsym(RTLD_NEXT, "mkdirat");
  (void)mode;
  return real(fd, path, 0755);
}
`,
  'openat-ignores-mode': `#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
int openat(int fd, const char *path, int flags, ...) {
  int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
  return real(fd, path, flags, 0644);
}
`,
  // An rtld-audit library that audits nothing (LD_AUDIT): harmless, but part of what the route runs under.
  'audit-nothing': `unsigned int la_version(unsigned int version) { return version; }
`,
  'fcntl-getfd-fails': `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  if (cmd == F_GETFD) { errno = EBADF; return -1; }
  int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
  return real(fd, cmd, arg);
}
`,
  // The ACL reader's one C call on Linux (src/shared/storage/directory-acl.ts), crashing.
  'crash-lgetxattr': `#include <signal.h>
#include <sys/types.h>
ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size) {
  (void)path; (void)name; (void)value; (void)size;
  raise(SIGSEGV);
  return -1;
}
`,
  // The same call failing without saying why (errno 0), as if errno were read after something else ran.
  'lgetxattr-loses-errno': `#include <errno.h>
#include <sys/types.h>
ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size) {
  (void)path; (void)name; (void)value; (void)size;
  errno = 0;
  return -1;
}
`,
  // The reader's call by descriptor (fgetxattr, below the project root), crashing.
  'crash-fgetxattr': `#include <signal.h>
#include <sys/types.h>
ssize_t fgetxattr(int fd, const char *name, void *value, size_t size) {
  (void)fd; (void)name; (void)value; (void)size;
  raise(SIGSEGV);
  return -1;
}
`,
  // Stand-ins whose reader would see no writer where there is one, or one where there is none: the
  // proof's controls (an ACL whose named entries write, the same under a mask without write) must
  // catch each. They touch only the POSIX ACL attributes and pass everything else to the real calls.
  ...Object.fromEntries(
    (
      [
        // Calls that fail keep failing as they would (the errno checks come first); one that succeeds says there is no ACL.
        ['xattr-sees-no-acl', 'ssize_t n = REAL; if (n < 0) return n; errno = ENODATA; return -1;'],
        ['xattr-loses-write', 'ssize_t n = REAL; for (ssize_t at = 4; value != 0 && at + 8 <= n; at += 8) ((unsigned char *)value)[at + 2] &= ~2; return n;'],
        [
          'xattr-mask-always-rwx',
          'ssize_t n = REAL; for (ssize_t at = 4; value != 0 && at + 8 <= n; at += 8) if (((unsigned char *)value)[at] == 0x10) ((unsigned char *)value)[at + 2] = 7; return n;',
        ],
      ] as const
    ).map(([name, body]) => [
      name,
      `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/types.h>
static int posix_acl(const char *name) { return strncmp(name, "system.posix_acl_", 17) == 0; }
ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size) {
  ssize_t (*real)(const char *, const char *, void *, size_t) = (ssize_t (*)(const char *, const char *, void *, size_t))dlsym(RTLD_NEXT, "lgetxattr");
  if (!posix_acl(name)) return real(path, name, value, size);
  ${body.replace('REAL', 'real(path, name, value, size)')}
}
ssize_t fgetxattr(int fd, const char *name, void *value, size_t size) {
  ssize_t (*real)(int, const char *, void *, size_t) = (ssize_t (*)(int, const char *, void *, size_t))dlsym(RTLD_NEXT, "fgetxattr");
  if (!posix_acl(name)) return real(fd, name, value, size);
  ${body.replace('REAL', 'real(fd, name, value, size)')}
}
`,
    ]),
  ),
};

function preloadSkip(): string | undefined {
  if (process.platform !== 'linux') return 'LD_PRELOAD stand-ins are built for Linux';
  const gcc = spawnSync('gcc', ['--version'], { encoding: 'utf8' });
  if (gcc.status !== 0) return 'gcc is not installed, so the preloaded stand-in libraries cannot be built (apt-get install gcc)';
  return undefined;
}

/** Why /etc cannot be overlaid in a private mount namespace here (to give one server its own /etc/ld.so.preload), or undefined. */
function etcOverlaySkip(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root to mount an overlay on /etc in a private mount namespace (run as root)';
  const layer = tempDir('symbi-etc-probe-');
  try {
    fs.writeFileSync(path.join(layer, 'probe'), 'x');
    const probe = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t overlay overlay -o lowerdir='${layer}':/etc /etc && test -f /etc/probe`], {
      encoding: 'utf8',
    });
    if (probe.status !== 0)
      return `an overlay on /etc in a private mount namespace is not possible here: ${(probe.stderr || probe.error?.message || '').trim()}`;
    return undefined;
  } finally {
    removeProject(layer);
  }
}

const PROJECT = {
  'agents/assistant.symbi': 'agent assistant {\n  capabilities = ["answer"]\n}\n',
  'policies/mcp-server/respond.cedar': '@id("permit-respond")\npermit (principal, action == Action::"respond", resource);\n',
};

/** The "project files:" line of a server's standard error, once it serves. */
async function routeLineOf(server: RunningServer): Promise<string> {
  const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
  return stderr.split('\n').find((l) => l.includes('project files: confinement route')) ?? stderr;
}

// A proof cache in which one server start, with the libc route forced, proved in a child process and
// remembered what it proved (the libc route and the ACL reader). The tests that begin with a
// remembered proof copy it rather than each paying for a first start of their own: made once per file,
// by the first test that asks, and the first start's line is checked here.
let rememberedTemplate: Promise<string> | undefined;
const rememberedScratch: string[] = [];
after(() => {
  for (const dir of rememberedScratch) removeProject(dir);
});

function rememberedProofs(): Promise<string> {
  return (rememberedTemplate ??= (async () => {
    const project = makeProject(PROJECT, 'symbi-proof-template-project-');
    const cache = tempDir('symbi-proof-template-');
    rememberedScratch.push(project, cache);
    const server = await startServer(project, { env: { ...serverEnv(), SYMBI_CONFINEMENT_ROUTE: 'libc', XDG_CACHE_HOME: cache } });
    try {
      const line = await routeLineOf(server);
      assert.match(line, /confinement route libc .*; proven in a child process \(\d+ ms\), remembered(;|$)/, line);
    } finally {
      await server.close();
    }
    return cache;
  })());
}

/** `cache` (an empty folder) given a private copy of the remembered proofs, as the server itself keeps them; returns `cache`. */
async function withRememberedProofs(cache: string): Promise<string> {
  const template = await rememberedProofs();
  fs.mkdirSync(path.join(cache, 'symbi-mcp'), { mode: 0o700 });
  const file = path.join(cache, 'symbi-mcp', 'route-proofs.json');
  fs.copyFileSync(path.join(template, 'symbi-mcp', 'route-proofs.json'), file);
  fs.chmodSync(file, 0o600);
  return cache;
}

describe('an FFI route is proven in a child process first', { skip: preloadSkip() }, () => {
  let libs: string;
  let project: string;
  const lib = (name: string): string => path.join(libs, `${name}.so`);

  before(() => {
    libs = tempDir('symbi-preloads-');
    for (const [name, source] of Object.entries(PRELOADS)) {
      fs.writeFileSync(path.join(libs, `${name}.c`), source);
      const built = spawnSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib(name), path.join(libs, `${name}.c`), '-ldl'], { encoding: 'utf8' });
      assert.equal(built.status, 0, built.stderr);
    }
    project = makeProject(PROJECT, 'symbi-route-proof-');
  });

  after(() => {
    removeProject(project);
    removeProject(libs);
  });

  const proofCache = suiteScratch('symbi-proof-cache-');
  // A proving child that crashes leaves its self-test's scratch folder in its temporary directory:
  // each server gets one of the suite's own, removed with the suite.
  const serverTmp = suiteScratch('symbi-proof-tmp-');

  /** A server with `extra` in its environment and a cache folder of its own (or `cache`). */
  async function serve(extra: Record<string, string>, cache = proofCache()): Promise<RunningServer> {
    return startServer(project, { env: { ...serverEnv(), TMPDIR: serverTmp(), XDG_CACHE_HOME: cache, ...extra } });
  }

  it('a crashing fdopendir costs the FFI routes, not the server: it answers through /proc and names the crashed routes', async () => {
    const { SYMBI_CONFINEMENT_ROUTE: _forced, ...env } = serverEnv();
    const server = await startServer(project, { env: { ...env, TMPDIR: serverTmp(), XDG_CACHE_HOME: proofCache(), LD_PRELOAD: lib('crash-fdopendir') } });
    try {
      const list = await server.call('list_agents', {});
      assert.equal(list.isError, undefined, textOf(list));
      assert.deepEqual(
        (list.structuredContent as { agents: Array<{ stem: string }> }).agents.map((a) => a.stem),
        ['assistant'],
      );
      const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
      assert.match(stderr, /confinement route proc /, stderr);
      assert.match(stderr, /route openat2 crashed in its proof in a child process \(SIGSEGV\)/, stderr);
      assert.match(stderr, /route libc crashed in its proof in a child process \(SIGSEGV\)/, stderr);
    } finally {
      await server.close();
    }
  });

  it('with the libc route forced, a crashing fdopendir refuses every file tool with the reason, and the server keeps answering', async () => {
    const server = await serve({ SYMBI_CONFINEMENT_ROUTE: 'libc', LD_PRELOAD: lib('crash-fdopendir') });
    try {
      const list = await server.call('list_agents', {});
      assert.equal(list.isError, true);
      assert.match(textOf(list), /route libc crashed in its proof in a child process \(SIGSEGV\)/);
      const inline = await server.call('parse_dsl', { content: 'agent inline {}\n' });
      assert.equal(inline.isError, undefined, textOf(inline));
    } finally {
      await server.close();
    }
  });

  it(
    'a remembered proof is not reused once /etc/ld.so.preload names a crashing fdopendir (an overlay on /etc in a private mount namespace)',
    { skip: etcOverlaySkip() },
    async () => {
      // The libc route's proof is remembered (rememberedProofs: a first start proved and remembered it).
      const cache = await withRememberedProofs(proofCache());
      // The real /etc is never touched: an overlay whose top layer holds only ld.so.preload, seen by the server alone.
      const layer = tempDir('symbi-etc-layer-');
      try {
        fs.writeFileSync(path.join(layer, 'ld.so.preload'), `${lib('crash-fdopendir')}\n`);
        const server = await startServer(project, {
          env: { ...serverEnv(), TMPDIR: serverTmp(), XDG_CACHE_HOME: cache, SYMBI_CONFINEMENT_ROUTE: 'libc' },
          launcher: ['unshare', '-m', 'sh', '-c', `mount -t overlay overlay -o lowerdir='${layer}':/etc /etc && exec "$0" "$@"`],
        });
        try {
          const list = await server.call('list_agents', {});
          assert.equal(list.isError, true, textOf(list));
          assert.match(textOf(list), /route libc crashed in its proof in a child process \(SIGSEGV\)/);
          const inline = await server.call('parse_dsl', { content: 'agent inline {}\n' });
          assert.equal(inline.isError, undefined, textOf(inline));
        } finally {
          await server.close();
        }
      } finally {
        removeProject(layer);
      }
      assert.ok(
        !fs.existsSync('/etc/ld.so.preload') || !fs.readFileSync('/etc/ld.so.preload', 'utf8').includes('crash-fdopendir'),
        'the real /etc is untouched',
      );
    },
  );

  it('a remembered proof is not reused under LD_AUDIT', async () => {
    // The libc route's proof is remembered (rememberedProofs); that a copy of it is used where nothing
    // changed is the remembered-proof test below ('the first start proves in a child ...').
    const cache = await withRememberedProofs(proofCache());
    const server = await serve({ SYMBI_CONFINEMENT_ROUTE: 'libc', LD_AUDIT: lib('audit-nothing') }, cache);
    try {
      assert.match(await routeLineOf(server), /proven in a child process \(\d+ ms\), remembered(;|$)/);
    } finally {
      await server.close();
    }
  });

  it(
    'without /proc/self/maps (a tmpfs over /proc in a private mount namespace) the proof is made at every start and never remembered',
    { skip: namespaceSkip() },
    async () => {
      const cache = proofCache();
      for (let start = 0; start < 2; start++) {
        const server = await startServer(project, {
          env: { ...serverEnv(), TMPDIR: serverTmp(), XDG_CACHE_HOME: cache, SYMBI_CONFINEMENT_ROUTE: 'libc' },
          launcher: ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"'],
        });
        try {
          const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
          const line = stderr.split('\n').find((l) => l.includes('project files: confinement route')) ?? stderr;
          assert.match(line, /confinement route libc .*; proven in a child process \(\d+ ms\)/, `start ${start + 1}: ${line}`);
          assert.doesNotMatch(line, /remembered/, `start ${start + 1}: ${line}`);
        } finally {
          await server.close();
        }
      }
      assert.ok(!fs.existsSync(path.join(cache, 'symbi-mcp', 'route-proofs.json')), 'nothing was written to the cache');
    },
  );

  for (const withoutProc of [false, true]) {
    it(
      `one process proves a route once, ${withoutProc ? 'without /proc (nothing remembered on disk)' : 'with /proc'}; under another LD_AUDIT it proves again`,
      { skip: withoutProc ? namespaceSkip() : undefined },
      () => {
        // Three proofs asked for in one fresh process, as a second session started in it would ask.
        const script = [
          `const { proveInChild } = await import(${JSON.stringify(builtModule('shared/confinement/route-proof.js'))});`,
          `const env = { ...process.env };`,
          `const asked = [env, env, { ...env, LD_AUDIT: ${JSON.stringify(lib('audit-nothing'))} }];`,
          `process.stdout.write(JSON.stringify(asked.map((e) => { const p = proveInChild('libc', e, {}); return p.ok ? p.note : 'refused: ' + p.reason; })));`,
        ].join('\n');
        const node = [process.execPath, '--input-type=module', '-e', script];
        const [command, ...args] = withoutProc ? ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"', ...node] : node;
        const cache = proofCache();
        const run = spawnSync(command!, args, { encoding: 'utf8', env: { ...serverEnv(), TMPDIR: serverTmp(), XDG_CACHE_HOME: cache } });
        assert.equal(run.status, 0, run.stderr);
        const [first, second, third] = JSON.parse(run.stdout) as string[];
        const proven = withoutProc ? /^proven in a child process \(\d+ ms\)$/ : /^proven in a child process \(\d+ ms\), remembered$/;
        assert.match(first!, proven);
        assert.equal(second, 'proven in a child process earlier in this process');
        assert.match(third!, proven);
      },
    );
  }

  it('a hanging fdopendir is cut off at the deadline and refuses the route', async () => {
    const server = await serve({
      SYMBI_CONFINEMENT_ROUTE: 'libc',
      LD_PRELOAD: lib('hang-fdopendir'),
      SYMBI_CONFINEMENT_TEST_CONSTANTS: '{"PROOF_DEADLINE_MS":1500}',
    });
    try {
      const list = await server.call('list_agents', {});
      assert.equal(list.isError, true);
      assert.match(textOf(list), /route libc hung in its proof in a child process: no answer within 1500 ms/);
    } finally {
      await server.close();
    }
  });

  /**
   * The startup.audit line of a server whose project directories were refused: the storage is unusable
   * and the policy set denies every response, while the file tools keep answering.
   */
  async function ownershipRefusal(server: RunningServer): Promise<string> {
    const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
    assert.match(stderr, /policy set denies every response: project directories: /, stderr);
    const list = await server.call('list_agents', {});
    assert.equal(list.isError, undefined, textOf(list));
    return stderr.split('\n').find((l) => l.includes('audit storage unusable')) ?? stderr;
  }

  const ACL_CRASHED =
    /cannot be checked for other writers: the ACL reader crashed in its proof in a child process \(SIGSEGV\), so it is not called in the server;.*\(fix: start the server without any library preloaded into it that replaces these C calls/;

  // One server for both: a crashing lgetxattr is proven afresh whether or not a proof made without it is
  // remembered (LD_PRELOAD is part of what a proof is remembered for), so the cache here holds one.
  it('a crashing lgetxattr costs the ownership check, not the server, even where an ACL proof without it is remembered: the project is refused with the reason, and the server answers', async () => {
    const cache = await withRememberedProofs(proofCache());
    const remembered = JSON.parse(fs.readFileSync(path.join(cache, 'symbi-mcp', 'route-proofs.json'), 'utf8')) as { proofs: string[] };
    assert.ok(
      remembered.proofs.some((p) => p.startsWith('acl sha256:')),
      JSON.stringify(remembered.proofs),
    );
    const server = await serve({ LD_PRELOAD: lib('crash-lgetxattr') }, cache);
    try {
      const audit = await ownershipRefusal(server);
      assert.match(audit, ACL_CRASHED, audit);
      // The confinement routes never call lgetxattr: they are proven and serve as usual.
      assert.match(server.stderr(), /project files: confinement route (openat2|libc) /);
    } finally {
      await server.close();
    }
  });

  it('an lgetxattr that fails with no errno fails the ACL proof on the errno check, and the project is refused with it', async () => {
    const server = await serve({ LD_PRELOAD: lib('lgetxattr-loses-errno') });
    try {
      const audit = await ownershipRefusal(server);
      assert.match(audit, /the ACL reader failed its self-test: a path through a file fails with ENOTDIR, read right after the call: read as .*errno 0/, audit);
    } finally {
      await server.close();
    }
  });

  it('a crashing fgetxattr (the read by descriptor) costs the ownership check, not the server', async () => {
    const server = await serve({ LD_PRELOAD: lib('crash-fgetxattr') });
    try {
      const audit = await ownershipRefusal(server);
      assert.match(audit, ACL_CRASHED, audit);
    } finally {
      await server.close();
    }
  });

  // The proof's positive and negative controls (issue 56): a reader that never sees an entry, that
  // loses its write permission, or that always sees a mask with write, fails the proof, and the project is refused.
  const blindReaders: Array<[string, RegExp]> = [
    [
      'xattr-sees-no-acl',
      /the ACL reader failed its self-test: a directory given an access ACL whose named entries write reads as set: read as \{"kind":"none"\}/,
    ],
    [
      'xattr-loses-write',
      /the ACL reader failed its self-test: a directory given an access ACL whose named entries write reads as set: read as posix u::5,u:65534:5,g::5,g:65534:5,m::5,o::0/,
    ],
    ['xattr-mask-always-rwx', /the ACL reader failed its self-test: a directory given an access ACL whose mask takes write away reads as set: read as /],
  ];
  for (const [stand, said] of blindReaders) {
    it(`a reader that cannot see what an ACL grants (${stand}) fails the ACL proof, and the project is refused with it`, async () => {
      const server = await serve({ LD_PRELOAD: lib(stand) });
      try {
        const audit = await ownershipRefusal(server);
        assert.match(audit, said, audit);
      } finally {
        await server.close();
      }
    });
  }

  const wrongCalls: Array<[string, RegExp]> = [
    [
      'mkdirat-ignores-mode',
      /route libc failed its self-test: the storage calls create, rename and remove: the created directory has mode 0755, expected 0700/,
    ],
    ['openat-ignores-mode', /route libc failed its self-test: the storage calls create, rename and remove: the created file has mode 0644, expected 0600/],
    ['fcntl-getfd-fails', /route libc failed its self-test: the descriptor flags can be read: EBADF: fcntl\(F_GETFD\) failed/],
  ];
  for (const [name, reason] of wrongCalls) {
    it(`${name}: the self-test refuses the libc route, saying which check failed`, async () => {
      const server = await serve({ SYMBI_CONFINEMENT_ROUTE: 'libc', LD_PRELOAD: lib(name) });
      try {
        const list = await server.call('list_agents', {});
        assert.equal(list.isError, true);
        assert.match(textOf(list), reason);
      } finally {
        await server.close();
      }
    });
  }
});

describe('a passed proof is remembered in the user cache directory, and only a private cache is trusted', () => {
  const skip = routeSkip('libc');
  let project: string;

  before(() => {
    project = makeProject(PROJECT, 'symbi-proof-cache-project-');
  });

  after(() => removeProject(project));

  /** The "project files:" line of a server started with XDG_CACHE_HOME=`cache` and the libc route forced. */
  async function routeLine(cache: string): Promise<string> {
    const server = await startServer(project, { env: { ...serverEnv(), SYMBI_CONFINEMENT_ROUTE: 'libc', XDG_CACHE_HOME: cache } });
    try {
      return await routeLineOf(server);
    } finally {
      await server.close();
    }
  }

  it('the first start proves in a child and remembers it privately; the next start skips the child', { skip }, async () => {
    // The first start is rememberedProofs' (its line is checked there); what it wrote is private.
    const written = path.join(await rememberedProofs(), 'symbi-mcp', 'route-proofs.json');
    assert.equal(fs.statSync(written).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(written)).mode & 0o777, 0o700);
    const cache = await withRememberedProofs(tempDir('symbi-proof-cache-'));
    try {
      assert.match(await routeLine(cache), /confinement route libc .*; its child-process proof is remembered for this system(;|$)/);
    } finally {
      removeProject(cache);
    }
  });

  it('a cache file other users can write is ignored and left alone: the route is proven again', { skip }, async () => {
    const cache = await withRememberedProofs(tempDir('symbi-proof-cache-'));
    try {
      const file = path.join(cache, 'symbi-mcp', 'route-proofs.json');
      fs.chmodSync(file, 0o620);
      const line = await routeLine(cache);
      assert.match(line, /proven in a child process \(\d+ ms\); not remembered: \S+route-proofs\.json can be written by other users \(mode 620\)/);
      assert.equal(fs.statSync(file).mode & 0o777, 0o620, 'not rewritten');
    } finally {
      removeProject(cache);
    }
  });

  it(
    'a cache folder or file that belongs to another user is not trusted',
    { skip: skip ?? (process.getuid?.() === 0 ? undefined : 'needs root to give the cache to another user') },
    async () => {
      const cache = await withRememberedProofs(tempDir('symbi-proof-cache-'));
      try {
        const file = path.join(cache, 'symbi-mcp', 'route-proofs.json');
        fs.chownSync(file, 65534, 65534);
        assert.match(await routeLine(cache), /not remembered: \S+route-proofs\.json belongs to uid 65534, not this user \(0\)/);
        fs.chownSync(path.dirname(file), 65534, 65534);
        assert.match(await routeLine(cache), /not remembered: \S+symbi-mcp belongs to uid 65534, not this user \(0\)/);
      } finally {
        removeProject(cache);
      }
    },
  );
});

/** A temporary directory on another file system than the projects', for the self-test, or why there is none. */
function otherTemporaryDirectory(): { dir?: string; skip?: string } {
  const shm = '/dev/shm';
  try {
    if (fs.statSync(shm).dev !== fs.statSync(os.tmpdir()).dev) return { dir: shm };
  } catch {
    // below
  }
  return { skip: `${shm} is not a file system apart from ${os.tmpdir()} here, so the self-test cannot run elsewhere than the project` };
}

describe("the file-system probes run on the project's own file system too", () => {
  const other = otherTemporaryDirectory();

  it('from the start after .symbiont/ exists, in a scratch folder there that is removed after', { skip: other.skip }, async () => {
    const project = makeProject(PROJECT, 'symbi-project-probe-');
    const cache = tempDir('symbi-proof-cache-');
    const start = async (extra: Record<string, string> = {}): Promise<string> => {
      const server = await startServer(project, { env: { ...serverEnv(), TMPDIR: other.dir!, XDG_CACHE_HOME: cache, ...extra } });
      try {
        const stderr = await waitForStderr(server, (t) => t.includes('serving MCP'));
        return stderr.split('\n').find((l) => l.includes('project files: confinement route')) ?? stderr;
      } finally {
        await server.close();
      }
    };
    try {
      assert.match(await start(), /; the project has no \.symbiont\/ yet, so its file system is probed from the next start/);
      assert.match(await start(), /; proven on the project file system too/);
      assert.deepEqual(
        fs.readdirSync(path.join(project, '.symbiont')).filter((n) => n.startsWith('route-probe-')),
        [],
        'the scratch folder is gone',
      );
      assert.match(await start(), /; proven on the project file system at an earlier start \(remembered\)/);
      // With the self-test on the project's own file system, there is nothing more to prove.
      assert.match(await start({ TMPDIR: os.tmpdir() }), /; the project shares its file system with the temporary directory, where the self-test ran/);
      fs.chmodSync(path.join(project, '.symbiont'), 0o770);
      assert.match(await start(), /; \.symbiont\/ can be changed by other users, so no probe runs there/);
    } finally {
      removeProject(project);
      removeProject(cache);
    }
  });
});

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';

// Runs inside the network namespace of schemapin-connect-failures.test.ts:
// starts key servers on the namespace's own loopback that fail in the ways a
// real key host can (TLS, reset, silence, a body cut short) plus one that
// works, writes their ports to a file, then runs the MCP server command given
// after `--` with this process's standard streams and exits when it does.
//
// usage: netns-key-servers.ts PORTS_FILE TLS_KEY TLS_CERT KEY_PEM -- command...

const [portsFile, tlsKeyFile, tlsCertFile, keyPemFile, dashes, ...command] = process.argv.slice(2);
if (!portsFile || !tlsKeyFile || !tlsCertFile || !keyPemFile || dashes !== '--' || command.length === 0) {
  process.stderr.write('usage: netns-key-servers.ts PORTS_FILE TLS_KEY TLS_CERT KEY_PEM -- command...\n');
  process.exit(2);
}
const tls = { key: fs.readFileSync(tlsKeyFile), cert: fs.readFileSync(tlsCertFile) };
const publicPem = fs.readFileSync(keyPemFile, 'utf8');

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const sockets = new Set<net.Socket>();
function track(server: net.Server): net.Server {
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return server;
}

// A working https key server (its certificate is trusted through NODE_EXTRA_CA_CERTS).
const good = track(https.createServer(tls, (_req, res) => res.end(publicPem)));
// Accepts TCP and closes it at once: the TLS handshake is reset.
const reset = track(net.createServer((s) => s.resetAndDestroy()));
// Accepts TCP and never says anything: only the deadline ends the fetch.
const silent = track(net.createServer(() => undefined));
// Answers over TLS, promises 1,000 bytes, sends ten, then drops the connection.
const cut = track(
  https.createServer(tls, (_req, res) => {
    res.writeHead(200, { 'content-length': '1000' });
    res.write('-----BEGIN');
    setTimeout(() => res.socket?.destroy(), 50);
  }),
);
// A port nothing listens on: the connection is refused.
const closed = net.createServer();

const ports = {
  good: await listen(good),
  reset: await listen(reset),
  silent: await listen(silent),
  cut: await listen(cut),
  closed: await listen(closed),
};
await new Promise<void>((resolve) => closed.close(() => resolve()));
fs.writeFileSync(portsFile, JSON.stringify(ports));

const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
child.on('exit', (code, signal) => {
  for (const s of sockets) s.destroy();
  process.exit(code ?? (signal ? 1 : 0));
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';

// Runs inside the network namespace of schemapin-default-port.test.ts: serves
// the public key in KEY_FILE (read again on every request, so the test can
// replace it) on the namespace's own loopback at the default ports, http on 80
// and https on 443, then runs the command given after `--` with this process's
// standard streams and exits when it does.
//
// usage: netns-default-port-key-servers.ts KEY_FILE TLS_KEY TLS_CERT -- command...

const [keyFile, tlsKeyFile, tlsCertFile, dashes, ...command] = process.argv.slice(2);
if (!keyFile || !tlsKeyFile || !tlsCertFile || dashes !== '--' || command.length === 0) {
  process.stderr.write('usage: netns-default-port-key-servers.ts KEY_FILE TLS_KEY TLS_CERT -- command...\n');
  process.exit(2);
}

const sockets = new Set<net.Socket>();
const answer = (_req: http.IncomingMessage, res: http.ServerResponse) => res.end(fs.readFileSync(keyFile));
const servers: net.Server[] = [http.createServer(answer), https.createServer({ key: fs.readFileSync(tlsKeyFile), cert: fs.readFileSync(tlsCertFile) }, answer)];
for (const server of servers) {
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
}
await Promise.all([80, 443].map((port, i) => new Promise<void>((resolve) => servers[i]!.listen(port, '127.0.0.1', resolve))));

const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
child.on('exit', (code, signal) => {
  for (const s of sockets) s.destroy();
  process.exit(code ?? (signal ? 1 : 0));
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));

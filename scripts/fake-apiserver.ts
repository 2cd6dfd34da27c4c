// Runs the fake Kubernetes API server (test/fakes/kube-apiserver.ts) on its own, for trying the
// gateway, the operator and the real kubectl together without a cluster:
//   npm run -s fake-apiserver -- --port 6443 --kubeconfig /tmp/fake.kubeconfig [--namespace ai] [--crds DIR]
// It starts empty, as a fresh cluster: install the CRDs with `kubectl apply -f charts/tollgate/crds`,
// or start with those of a directory already installed (--crds charts/tollgate/crds). It writes a
// kubeconfig that points at it, and serves until SIGINT/SIGTERM.
// SIGUSR2 stops listening (clients see refused connections, an outage); the next SIGUSR2 listens
// again on the same port, every object kept.
import { parseArgs } from 'node:util';
import { FakeKubeApiServer } from '../test/fakes/kube-apiserver.ts';
import { loadCrds } from '../test/fakes/kube-resources.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    kubeconfig: { type: 'string' },
    namespace: { type: 'string', default: 'default' },
    crds: { type: 'string' },
    token: { type: 'string' },
    'history-limit': { type: 'string', default: '1000' },
    'bookmark-interval-ms': { type: 'string', default: '60000' },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`fake-apiserver: --port must be a port number, got ${values.port}\n`);
  process.exit(2);
}

const server = new FakeKubeApiServer({
  port,
  crds: values.crds ? loadCrds(values.crds) : [],
  token: values.token,
  historyLimit: Number(values['history-limit']),
  bookmarkIntervalMs: Number(values['bookmark-interval-ms']),
});
await server.listen();
if (values.kubeconfig) await server.writeKubeconfig(values.kubeconfig, values.namespace);
process.stdout.write(`fake-apiserver: listening on ${server.url}${values.kubeconfig ? `; kubeconfig written to ${values.kubeconfig}` : ''}\n`);

// Nothing else holds the process open while the port is closed for an outage.
const keepAlive = setInterval(() => undefined, 2 ** 30);

// SIGUSR2 toggles an outage (SIGUSR1 belongs to Node's inspector).
process.on('SIGUSR2', () => {
  if (server.listening) void server.stopListening().then(() => process.stdout.write('fake-apiserver: stopped listening (outage)\n'));
  else void server.resumeListening().then(() => process.stdout.write(`fake-apiserver: listening again on ${server.url}\n`));
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    clearInterval(keepAlive);
    void server.close().then(() => process.exit(0));
  });
}

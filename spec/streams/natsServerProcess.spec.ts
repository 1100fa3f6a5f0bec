import { createServer, Server } from 'node:net';
import { PortInUseError, startNatsServer } from '../../streams/natsServerProcess';

// The private nats-server every NATS spec starts: a port someone else holds is said as such, so
// that whoever picked the port can pick another (a cluster's start does; a lone server's own port
// is picked again by startNatsServer itself).
let holder: Server;
let held: number;

beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  held = (holder.address() as { port: number }).port;
});

afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

describe('startNatsServer', () => {
  it('on a port another process listens on: a PortInUseError naming the reason from its log', async () => {
    const failure = startNatsServer({ port: held, jetstream: false });
    await expect(failure).rejects.toBeInstanceOf(PortInUseError);
    await expect(failure).rejects.toThrow(/^nats-server exited with 1: .*address already in use/);
  });

  it('started with a bad configuration: a plain error with the reason, not a PortInUseError', async () => {
    const failure = startNatsServer({ jetstream: false, config: 'no_such_setting_at_all: {' });
    await expect(failure).rejects.toThrow(/^nats-server exited with 1/);
    await expect(failure).rejects.not.toBeInstanceOf(PortInUseError);
  });

  it('on a port of its own choosing: starts and stops', async () => {
    const server = await startNatsServer({ jetstream: false });
    expect(server.port).not.toBe(held);
    await server.stop();
  });
});

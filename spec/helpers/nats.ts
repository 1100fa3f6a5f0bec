import { NatsServerOptions, NatsServerProcess, startNatsServer } from '../../streams/natsServerProcess';

/**
 * A private nats-server for one suite: started in `beforeAll`, stopped in `afterAll`. Read
 * `server()` inside tests (it is set once the hook has run).
 */
export function useNatsServer(options: NatsServerOptions = {}): () => NatsServerProcess {
  let server: NatsServerProcess | undefined;
  beforeAll(async () => {
    server = await startNatsServer(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('the nats-server has not started (use it inside a test)');
    return server;
  };
}

import { Observable, firstValueFrom, filter } from 'rxjs';
import type { ConfigureInput } from '../../lib/choria/agents';
import { FleetEvent, SimulatedFleet, SimulatedFleetOptions, startSimulatedFleet } from '../../streams/simulate/simulatedFleet';
import { ChoriaRpcClient, ChoriaRpcClientOptions } from '../../streams/choria/rpcClient';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';

/** A provisioner-side client and a simulated fleet, each on its own connection to one server. */
export interface ChoriaWorld {
  client: ChoriaRpcClient;
  fleet: SimulatedFleet;
  clientConnection: FleetConnection;
  fleetConnection: FleetConnection;
  /** Another client on the client's connection (another caller id, another protocol). */
  newClient(options?: Partial<ChoriaRpcClientOptions>): ChoriaRpcClient;
  /** Stops the fleet and every client, and drains both connections. */
  stop(): Promise<void>;
}

/** Starts a fleet and a client against the server at `url`. */
export async function startChoriaWorld(
  url: string,
  fleetOptions: Omit<SimulatedFleetOptions, 'nc'>,
  clientOptions: Partial<ChoriaRpcClientOptions> = {},
): Promise<ChoriaWorld> {
  const clientConnection = await openNatsConnection({ servers: [url], inboxPrefix: 'provisioning.reply', name: 'spec-provisioner' });
  const fleetConnection = await openNatsConnection({ servers: [url], name: 'spec-fleet' });
  const fleet = await startSimulatedFleet({ nc: fleetConnection.nc, ...fleetOptions });
  const clients: ChoriaRpcClient[] = [];
  const newClient = (options: Partial<ChoriaRpcClientOptions> = {}): ChoriaRpcClient => {
    const client = new ChoriaRpcClient({ nc: clientConnection.nc, identity: 'provisioner.example.net', ...clientOptions, ...options });
    clients.push(client);
    return client;
  };
  const client = newClient();
  return {
    client,
    fleet,
    clientConnection,
    fleetConnection,
    newClient,
    async stop() {
      await fleet.stop();
      for (const c of clients) c.close();
      await clientConnection.drain();
      await fleetConnection.drain();
    },
  };
}

/** Resolves with the first fleet event of `type` for `identity`. Subscribe before causing it. */
export function nextEvent(events$: Observable<FleetEvent>, type: FleetEvent['type'], identity?: string): Promise<FleetEvent> {
  return firstValueFrom(events$.pipe(filter((e) => e.type === type && (identity === undefined || e.identity === identity))));
}

/** Everything `configure` takes, empty (the provisioner always sends every key). */
export function configureInput(config: Record<string, string>, token = ''): ConfigureInput {
  return {
    config: JSON.stringify(config),
    token,
    ca: '',
    certificate: '',
    ssldir: '',
    key: '',
    ecdh_public: '',
    action_policies: {},
    opa_policies: {},
    server_jwt: '',
  };
}

/** A configuration that takes a server out of provisioning mode when it restarts. */
export const PROVISIONED_CONFIG = {
  'plugin.choria.server.provision': 'false',
  'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
};

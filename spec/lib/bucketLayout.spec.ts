import { bucketLayout, singleReplicaWarning } from '../../lib/bucketLayout';

describe('a bucket layout from its stream info', () => {
  it('one broker: nothing to warn about, whatever the replicas', () => {
    const layout = bucketLayout('RXFLEET_PROVISIONER_CLAIMS', { config: { num_replicas: 1 } });
    expect(layout).toEqual({ bucket: 'RXFLEET_PROVISIONER_CLAIMS', replicas: 1, servers: 1 });
    expect(singleReplicaWarning(layout)).toBeUndefined();
  });

  it('a cluster with one replica: the server holding it is named as the single point of failure', () => {
    const layout = bucketLayout('CHORIA_LEADER_ELECTION', { config: { num_replicas: 1 }, cluster: { name: 'c1', leader: 'broker-2' } });
    expect(layout).toEqual({ bucket: 'CHORIA_LEADER_ELECTION', replicas: 1, servers: 1, cluster: 'c1', leader: 'broker-2' });
    expect(singleReplicaWarning(layout)).toBe(
      'the CHORIA_LEADER_ELECTION bucket has 1 replica on the cluster c1: server broker-2 is a single point of failure for it; give it a replica on every server (nats stream edit KV_CHORIA_LEADER_ELECTION --replicas 3)',
    );
  });

  it('a cluster with three replicas: nothing to warn about', () => {
    const layout = bucketLayout('B', { config: { num_replicas: 3 }, cluster: { name: 'c1', leader: 'x', replicas: [{}, {}] } });
    expect(layout.servers).toBe(3);
    expect(singleReplicaWarning(layout)).toBeUndefined();
  });
});

// A simulated fleet of Choria servers in provisioning mode, for tests, the demo and benchmarks.
export * from './simulatedFleet';
export * from './simulatedNode';
export * from './fleetKeys';
export * from './fleetReport';
export * from './seededRandom';
export { PROVISIONING_AGENTS, leavesProvisioning } from './serverAgents';

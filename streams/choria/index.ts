// Choria over the daemon's one NATS connection: RPC, broadcast discovery, lifecycle events.
export * from './rpcClient';
export * from './discovery';
export * from './lifecycleListener';
export * from './replyInbox';

import { FleetEvent, FleetStats, RequestRecord } from '../streams/simulate/simulatedFleet';

/** How a fleet reports: JSON lines (one object per line) or text for people. */
export type ReportFormat = 'json' | 'text';

/** The line saying the fleet is listening, with what a provisioner needs to trust its JWT. */
export function readyLine(
  format: ReportFormat,
  fields: { nodes: number; jwtVerifyKey: string; jwtKeyType: string; servers: string[] },
): string {
  if (format === 'json')
    return JSON.stringify({
      type: 'ready',
      nodes: fields.nodes,
      servers: fields.servers,
      jwt_key_type: fields.jwtKeyType,
      jwt_verify_cert: fields.jwtVerifyKey,
    });
  const key = fields.jwtKeyType === 'ed25519' ? fields.jwtVerifyKey : '(RSA public key; write it out with --jwt-public-key-out)';
  return `simulating ${fields.nodes} Choria servers in provisioning mode on ${fields.servers.join(',')}; jwt_verify_cert: ${key}`;
}

/** A progress line. */
export function progressLine(format: ReportFormat, stats: FleetStats, elapsedMs: number): string {
  if (format === 'json') return JSON.stringify({ type: 'progress', elapsed_s: round(elapsedMs / 1000), ...stats });
  return (
    `${(elapsedMs / 1000).toFixed(1).padStart(6)}s booted ${stats.booted}/${stats.nodes} provisioning ${stats.provisioning} provisioned ${stats.provisioned}` +
    ` configured ${stats.configured} duplicates ${stats.duplicates} by-two ${stats.configuredByTwo} lock-refusals ${stats.lockRefusals} token-refusals ${stats.tokenRefusals} failures ${stats.injectedFailures}`
  );
}

/** A line for an event worth reporting the moment it happens (a duplicate provisioning). */
export function eventLine(format: ReportFormat, event: FleetEvent): string {
  if (format === 'json') return JSON.stringify({ type: event.type, identity: event.identity });
  return `${event.type}: ${event.identity}`;
}

/** A line per request a node received (`--trace`), `at` in ms since the epoch. */
export function requestLine(format: ReportFormat, request: RequestRecord): string {
  if (format === 'json') return JSON.stringify({ type: 'request', ...request });
  return `request: ${request.identity} from ${request.caller}: ${request.agent}#${request.action} at ${new Date(request.at).toISOString()}`;
}

/** The summary printed on exit. */
export function summaryLines(format: ReportFormat, stats: FleetStats, elapsedMs: number): string[] {
  if (format === 'json') return [JSON.stringify({ type: 'summary', elapsed_s: round(elapsedMs / 1000), ...stats })];
  const rows: [string, number | string][] = [
    ['nodes', stats.nodes],
    ['booted', stats.booted],
    ['provisioned', stats.provisioned],
    ['still provisioning', stats.provisioning],
    ['shut down', stats.shutdown],
    ['configured', stats.configured],
    ['duplicates', stats.duplicates],
    ['configured by two', stats.configuredByTwo],
    ['provisioning loops', stats.provisioningLoops],
    ['upgraded', stats.upgraded],
    ['lock refusals', stats.lockRefusals],
    ['token refusals', stats.tokenRefusals],
    ['injected failures', stats.injectedFailures],
    ['requests', stats.requests],
    ['bad requests', stats.badRequests],
    ['stale requests', stats.staleRequests],
    ['signature refusals', stats.signatureRefusals],
    ['time', `${(elapsedMs / 1000).toFixed(1)} s`],
  ];
  return ['summary:', ...rows.map(([name, value]) => `  ${`${name}:`.padEnd(20)}${value}`)];
}

const round = (n: number): number => Math.round(n * 1000) / 1000;

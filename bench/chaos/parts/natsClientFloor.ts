/**
 * The floor of a junk flood's cost: a bare NATS client (the daemons' own connection code, nats.js
 * underneath) subscribed to the subjects given on the command line, doing nothing with what
 * arrives. Whatever it spends receiving the flood, in CPU and in peak memory, any daemon built on
 * that client spends before its own code sees a byte. Run by the junk scenario as its own process:
 * `node --import tsx natsClientFloor.ts URL SUBJECT...`; it prints `{"ready":true,...}`, and on
 * SIGTERM its usage since then as one JSON line.
 */
import { readFileSync } from 'node:fs';
import { openNatsConnection } from '../../../streams/natsConnection';

const mib = (field: string): number =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
const cpu = (): number => (process.cpuUsage().user + process.cpuUsage().system) / 1e6;

async function main(): Promise<void> {
  const [url, ...subjects] = process.argv.slice(2);
  const connection = await openNatsConnection({ servers: [url], name: 'chaos-floor-client' });
  let messages = 0;
  let bytes = 0;
  for (const subject of subjects)
    connection.nc.subscribe(subject, {
      callback: (_error, msg) => {
        messages++;
        bytes += msg.data.byteLength;
      },
    });
  await connection.nc.flush();
  const ready = { peak: mib('VmHWM'), cpu: cpu() };
  console.log(JSON.stringify({ ready: true }));
  process.once('SIGTERM', () => {
    console.log(
      JSON.stringify({
        messages,
        bytes,
        cpu_seconds: Math.round((cpu() - ready.cpu) * 100) / 100,
        peak_rss_at_ready_mib: Math.round(ready.peak * 10) / 10,
        peak_rss_mib: Math.round(mib('VmHWM') * 10) / 10,
      }),
    );
    process.exit(0);
  });
}

void main();

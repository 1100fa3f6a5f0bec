import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { SiteDir, siteDir } from '../helpers/choriaSite';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER, sampleValue } from '../helpers/provisioner';
import { RXFLEET_BIN, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

const run = promisify(execFile);

// DECISIONS: a file the Go provisioner starts with, rxfleet starts with (warning where every node
// would fail), and `validate` says exactly what `provision` says. One case per file the issue
// names, each run as a site would run it: `rxfleet validate`, then `rxfleet provision` and a fleet.
describe('files the Go provisioner starts with', () => {
  const server = useNatsServer({ jetstream: false });
  let site: SiteDir;
  const running: RxfleetProcess[] = [];

  beforeAll(() => {
    site = siteDir('rxfleet-upstream-');
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(() => site.remove());

  /** The provisioner file (after the lines given: insecure, a /metrics port) and a choria.cfg. */
  const files = async (name: string, lines: string[]) => {
    const port = await freePort();
    const config = site.file(`${name}.yaml`, [...lines, 'choria_insecure: true', `monitor_port: ${port}`, 'site: up'].join('\n'));
    const choria = site.file(`${name}.cfg`, `identity = prov.example.net\nplugin.choria.middleware_hosts = ${server().url}\n`);
    return { config, choria, port };
  };

  /** `rxfleet validate`: exit 0, and its warning lines without the `warning: ` prefix. */
  const validateWarnings = async (config: string, choria: string): Promise<string[]> => {
    const { stdout } = await run(process.execPath, [RXFLEET_BIN, 'validate', '--config', config, '--choria-config', choria]);
    const lines = stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/: OK/);
    return lines.filter((l) => l.startsWith('warning: ')).map((l) => l.slice('warning: '.length));
  };

  const ready = async (port: number): Promise<void> =>
    waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      'the provisioner to be ready',
      20_000,
    );

  /** Starts the provisioner, waits until ready, and checks it logged exactly validate's warnings. */
  const provision = async (
    name: string,
    lines: string[],
    args: string[] = [],
  ): Promise<{ provisioner: RxfleetProcess; port: number; warnings: string[] }> => {
    const { config, choria, port } = await files(name, lines);
    const warnings = await validateWarnings(config, choria);
    const provisioner = startRxfleet([...args, 'provision', '--config', config, '--choria-config', choria]);
    running.push(provisioner);
    await ready(port);
    const logged = provisioner.lines.filter((l) => l.level === 40).map((l) => String(l.msg));
    expect(logged.slice(0, warnings.length)).toEqual(warnings);
    return { provisioner, port, warnings };
  };

  const fleet = async (nodes: number, extra: string[] = []): Promise<RxfleetProcess> => {
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      String(nodes),
      '--restart-delay',
      '100ms',
      '--json',
      '--report-every',
      '0',
      ...extra,
    ]);
    running.push(simulate);
    await simulate.next((l) => l.type === 'ready');
    return simulate;
  };

  it('server_jwt_validity: "" is upstream\'s year, with nothing to say', async () => {
    const { warnings } = await provision('validity', [`helper: ${MINIMAL_HELPER}`, 'server_jwt_validity: ""']);
    expect(warnings).toEqual([]);
  });

  it('loglevel: trace logs at warn, as upstream, after saying so', async () => {
    const { provisioner, warnings } = await provision('trace', [`helper: ${MINIMAL_HELPER}`, 'loglevel: trace']);
    expect(warnings).toEqual([
      expect.stringMatching(
        /trace.yaml: loglevel: "trace" is not one of debug, info, warn, error or fatal: logging at warn, as upstream does with a level it does not know$/,
      ),
    ]);
    expect(provisioner.lines.filter((l) => Number(l.level) < 40)).toEqual([]);
  });

  it("no helper: every node fails at the helper step with upstream's message", async () => {
    const { provisioner, warnings } = await provision('nohelper', ['token: t']);
    expect(warnings).toEqual([expect.stringMatching(/nohelper.yaml: helper: not set: every node will fail at the helper step/)]);
    await fleet(1);
    const failure = await provisioner.next((l) => String(l.msg).startsWith('Could not provision node-1.example.net'));
    expect(failure.msg).toBe(
      'Could not provision node-1.example.net: could not invoke configure helper: cannot parse helper command: empty',
    );
  });

  it("features.jwt without jwt_verify_cert: every node fails JWT validation with upstream's message", async () => {
    const { provisioner, warnings } = await provision('nojwtcert', [`helper: ${MINIMAL_HELPER}`, 'features: {jwt: true}']);
    expect(warnings).toEqual([expect.stringMatching(/nojwtcert.yaml: jwt_verify_cert: not set while features.jwt is on/)]);
    await fleet(1);
    const failure = await provisioner.next((l) => String(l.msg).startsWith('Could not provision node-1.example.net'));
    expect(failure.msg).toContain('no JWT verification certificate configured, cannot validate JWT');
  });

  it('a lifecycle component with a space: no startup events, as upstream, and discovery still finds the fleet', async () => {
    await fleet(2);
    const { provisioner, port, warnings } = await provision('space', [
      `helper: ${MINIMAL_HELPER}`,
      'lifecycle_component: "provision mode"',
    ]);
    expect(warnings).toEqual([expect.stringMatching(/space.yaml: lifecycle_component: "provision mode" contains white space/)]);
    // /ready answers once connected; the line comes as the pipeline is built, and through a pipe.
    await waitFor(
      () => provisioner.lines.some((l) => String(l.msg).startsWith('Could not listen for lifecycle events')),
      'the line saying startup events are off',
      20_000,
    );
    await waitFor(
      () => provisioner.lines.filter((l) => String(l.msg).startsWith('Provisioned ')).length === 2,
      'both nodes provisioned',
      20_000,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sampleValue(metrics, 'choria_provisioner_discovered', { site: 'up' })).toBe(2);
    expect(sampleValue(metrics, 'choria_provisioner_event_discovered', { site: 'up' })).toBe(0);
  });

  it("upstream's command line: --debug before the command, run, --pid; /metrics carries the process series, and no election series without leader_election", async () => {
    const pid = `${site.path}/provisioner.pid`;
    const { config, choria, port } = await files('cli', [`helper: ${MINIMAL_HELPER}`, 'loglevel: error']);
    const provisioner = startRxfleet(['--debug', 'run', `--config=${config}`, '--choria-config', choria, '--pid', pid]);
    running.push(provisioner);
    await ready(port);
    await waitFor(() => existsSync(pid), 'the pid file');
    // loglevel: error, but --debug wins, as upstream's.
    expect(provisioner.lines.some((l) => l.level === 20)).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const series of ['process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes'])
      expect(sampleValue(metrics, series)).toBeGreaterThan(0);
    expect(metrics).not.toMatch(/^choria_election_/m);
  });

  it("upstream's logfile: go-choria's logrus JSON, at upstream's warn when loglevel is unset; pino's shape with --log-format json", async () => {
    const logfile = `${site.path}/logs/choria-provisioner.log`;
    // An unknown key: a warning every start logs, so the file has a line at upstream's default level.
    const { config, choria, port } = await files('logfile', [`helper: ${MINIMAL_HELPER}`, `logfile: ${logfile}`, 'wrkers: 3']);
    const provisioner = startRxfleet(['run', '--config', config, '--choria-config', choria]);
    running.push(provisioner);
    await ready(port);
    await killAll(running.splice(0));
    const lines = readFileSync(logfile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(Object.keys(line)).toEqual([...Object.keys(line)].sort());
      expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
      expect(typeof line.msg).toBe('string');
      expect(['warning', 'error', 'fatal']).toContain(line.level);
      expect(line).not.toHaveProperty('pid');
    }
    expect(lines.some((l) => l.level === 'warning' && String(l.msg).includes('wrkers: unknown key'))).toBe(true);

    const pinoFile = `${site.path}/logs/pino.log`;
    const pino = await files('logfile-pino', [`helper: ${MINIMAL_HELPER}`, `logfile: ${pinoFile}`, 'loglevel: info']);
    const withPino = startRxfleet(['run', '--config', pino.config, '--choria-config', pino.choria, '--log-format', 'json']);
    running.push(withPino);
    await ready(pino.port);
    await killAll(running.splice(0));
    const pinoLines = readFileSync(pinoFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(pinoLines.some((l) => l.level === 30 && typeof l.time === 'number')).toBe(true);
  });
});

import { Rng } from './random';

/** Planted in every secret a generated configuration holds; no problem line may contain it. */
export const SECRET = 'Zq9SecretMarker';

/** The secret written as YAML can carry it: plain, quoted, broken, as an alias, a tag, a list, a block... */
function secretYaml(rng: Rng): string {
  return rng.pick([
    SECRET,
    `*${SECRET}`,
    `"${SECRET}`,
    `'${SECRET}`,
    `"${SECRET}"`,
    `[${SECRET}`,
    `[${SECRET}]`,
    `{${SECRET}}`,
    `{a: ${SECRET}}`,
    `&${SECRET} x`,
    `!!binary ${SECRET}`,
    `!!int ${SECRET}`,
    `!!timestamp ${SECRET}`,
    `!${SECRET} x`,
    `|\n    ${SECRET}`,
    `>-\n    ${SECRET}\n    more`,
    `\n    - ${SECRET}`,
    `\n    nested: ${SECRET}`,
    `${SECRET}: oops`,
    `${SECRET} # comment`,
    `${SECRET}\t\x00`,
    `@${SECRET}`,
    `%${SECRET}`,
    `\`${SECRET}`,
    `<<: ${SECRET}`,
    `*${SECRET}\n    <<: *${SECRET}`,
  ]);
}

function secretUrl(rng: Rng): string {
  return rng.pick([
    `nats://prov:${SECRET}@broker:4222`,
    `nats://${SECRET}@broker`,
    `tls://u:${SECRET}@[::1]:99999`,
    `prov:${SECRET}@broker:4222`,
    `nats://u:${SECRET}@`,
    `ws://u:${SECRET}@h:1/x?y`,
  ]);
}

function oddScalar(rng: Rng): string {
  return rng.pick([
    '',
    '~',
    'null',
    'yes',
    'no',
    'on',
    '0777',
    '-1',
    '1e9',
    '1.5',
    '"1m"',
    '30s',
    '1y',
    '-5m',
    'abc',
    '[]',
    '{}',
    '[1, 2]',
    '{a: 1}',
    '!!float 1',
    '&anc 5',
    '*anc',
    '0x1F',
    '"\\u0000"',
    'x'.repeat(rng.int(1, 300)),
  ]);
}

/** A provisioner YAML file built from its keys, with odd values, and secrets in every secret key. */
export function provisionerYaml(rng: Rng): string {
  const keys = [
    'workers',
    'interval',
    'logfile',
    'loglevel',
    'helper',
    'lifecycle_component',
    'choria_insecure',
    'site',
    'monitor_port',
    'cert_deny_list',
    'jwt_verify_cert',
    'jwt_signing_key',
    'server_jwt_validity',
    'leader_election',
    'upgrades_repository',
    'features',
    'broker_port',
    'rego_policy',
    'Workers',
    'unknown_key',
  ];
  const lines: string[] = [];
  for (let i = 0, n = rng.int(0, 8); i < n; i++) lines.push(`${rng.pick(keys)}: ${oddScalar(rng)}`);
  if (rng.bool(0.8)) lines.push(`token: ${secretYaml(rng)}`);
  if (rng.bool(0.5)) lines.push(`broker_provisioning_password: ${secretYaml(rng)}`);
  if (rng.bool(0.6)) {
    const section = [`  nats_password: ${secretYaml(rng).replace(/\n {4}/g, '\n      ')}`];
    if (rng.bool(0.5)) section.push(`  nats_servers: [${JSON.stringify(secretUrl(rng))}]`);
    if (rng.bool(0.3)) section.push(`  nats_servers: ${secretUrl(rng)}`);
    for (let i = 0, n = rng.int(0, 3); i < n; i++)
      section.push(
        `  ${rng.pick(['queue_capacity', 'shutdown_grace', 'helper_timeout', 'dns_servers', 'nats_user', 'other'])}: ${oddScalar(rng)}`,
      );
    lines.push('rxfleet:', ...(rng.bool(0.5) ? section : section.reverse()));
  }
  if (rng.bool(0.3)) lines.push(`features: {${rng.pick(['pki', 'jwt', 'ed25519', 'upgrades', 'x'])}: ${oddScalar(rng)}}`);
  // Shuffle the top-level lines (sections stay whole: they are joined below by their indent).
  return lines.join('\n') + (rng.bool() ? '\n' : '');
}

/** A Choria client configuration (`key = value`) with odd lines and secrets where they go. */
export function choriaConfig(rng: Rng): string {
  const keys = [
    'identity',
    'plugin.choria.middleware_hosts',
    'plugin.choria.use_srv',
    'plugin.choria.srv_domain',
    'plugin.security.provider',
    'plugin.security.file.certificate',
    'discovery_timeout',
    'ttl',
    'plugin.nats.user',
    'loglevel',
  ];
  const lines: string[] = [];
  for (let i = 0, n = rng.int(0, 8); i < n; i++) {
    const value = rng.pick([
      '',
      'yes',
      'maybe',
      '0',
      '-3',
      'file',
      'ssl',
      'broker:4222',
      'bad host',
      '~/x',
      'a,b,,c',
      rng.text(20).replace(/\n/g, ' '),
    ]);
    lines.push(rng.pick([`${rng.pick(keys)} = ${value}`, `${rng.pick(keys)}=${value}`, `# ${value}`, value, `  ${rng.pick(keys)} =   `]));
  }
  const pass = rng.pick([
    `plugin.nats.pass = ${SECRET}`,
    `plugin.nats.pass: ${SECRET}`,
    `plugin.nats.pass ${SECRET}`,
    `plugin.nats.pass=${SECRET}=${SECRET}`,
  ]);
  lines.splice(rng.int(0, lines.length), 0, pass);
  if (rng.bool(0.5))
    lines.splice(
      rng.int(0, lines.length),
      0,
      `plugin.choria.middleware_hosts = ${secretUrl(rng)}, ${rng.pick(['good:4222', 'bad host', ''])}`,
    );
  return lines.join(rng.bool(0.9) ? '\n' : '\r\n');
}

/** An enricher YAML file with odd values, and secrets in its NATS password, token, URL and client key. */
export function enricherYaml(rng: Rng): string {
  const keys = [
    'projects',
    'workers',
    'read_timeout',
    'ip_timeout',
    'read_delay',
    'sweep_interval',
    'store_interval',
    'debounce_window',
    'ttl',
    'data_dir',
    'config_exclude',
    'wants',
    'http',
    'unknown',
  ];
  const lines: string[] = [];
  for (let i = 0, n = rng.int(0, 6); i < n; i++) lines.push(`${rng.pick(keys)}: ${oddScalar(rng)}`);
  const nats = [`    password: ${secretYaml(rng).replace(/\n {4}/g, '\n      ')}`];
  if (rng.bool(0.5)) nats.push(`    token: ${secretYaml(rng).replace(/\n {4}/g, '\n      ')}`);
  if (rng.bool(0.5)) nats.push(`    url: ${JSON.stringify(secretUrl(rng))}`);
  if (rng.bool(0.3)) nats.push(`    ${rng.pick(['subject_prefix', 'max_held', 'user', 'tls', 'x'])}: ${oddScalar(rng)}`);
  lines.push('outputs:', `  stdout: ${rng.pick(['true', 'false', '1', 'yes'])}`, '  nats:', ...nats);
  if (rng.bool(0.4))
    lines.push(
      'incus:',
      `  url: ${rng.pick(['https://h:8443', '/var/lib/lxd/unix.socket', 'http://x', ''])}`,
      `  client_key: ${JSON.stringify(`-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`)}`,
    );
  return lines.join('\n');
}

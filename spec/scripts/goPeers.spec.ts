import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// scripts/go-peers.sh with `go` replaced by a stub on PATH that records its arguments and does
// what each command would leave behind, so the recipe is checked on any machine in a second.
const SCRIPT = resolve(__dirname, '../../scripts/go-peers.sh');

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-go-peers-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the script with a stub `go`; `refuse` makes `go install` of that module fail as the proxy does. */
function run(refuse: string[] = []): { code: number | null; stderr: string; calls: string[] } {
  const bin = join(dir, 'bin');
  const modSrc = join(dir, 'modsrc');
  mkdirSync(bin, { recursive: true });
  mkdirSync(join(modSrc, 'packager'), { recursive: true });
  writeFileSync(join(modSrc, 'main.go'), 'package main\n');
  writeFileSync(
    join(bin, 'go'),
    `#!/bin/sh
echo "$*" >> ${join(dir, 'calls')}
case "$1" in
  install)
    for r in ${refuse.join(' ')}; do case "$2" in "$r"@*) echo "go: $2: reading https://proxy.golang.org/x: 403 Forbidden" >&2; exit 1;; esac; done
    mkdir -p "$GOBIN" && touch "$GOBIN/$(basename "\${2%@*}" | sed 's/^v2$/nats-server/')" && chmod +x "$GOBIN"/*;;
  mod) printf '{\\n\\t"Path": "x",\\n\\t"Dir": "${modSrc}",\\n\\t"Sum": "h1:x"\\n}\\n';;
  generate) touch plugin_0_choria_provision.go;;
  build) while [ "$1" != "-o" ]; do shift; done; touch "$2"; chmod +x "$2";;
esac
`,
  );
  chmodSync(join(bin, 'go'), 0o755);
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, RXFLEET_PEERS_DIR: join(dir, 'peers') };
  const result = spawnSync('sh', [SCRIPT], { env, encoding: 'utf8' });
  const log = join(dir, 'calls');
  return { code: result.status, stderr: result.stderr, calls: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
}

describe('scripts/go-peers.sh (the real Go peers, pinned, from the Go module proxy)', () => {
  it('installs nats-server with go install, builds go-choria from its module with the plugins generated and the provisioning JWT compiled in', () => {
    const { code, calls } = run(['github.com/choria-io/provisioner']);
    expect(code).toBe(0);
    expect(calls).toEqual([
      'install github.com/nats-io/nats-server/v2@v2.15.3',
      'mod download -json github.com/choria-io/go-choria@v0.29.4',
      'generate -run plugin',
      expect.stringMatching(
        /^build -trimpath -ldflags -s -w -X github\.com\/choria-io\/go-choria\/build\.ProvisionJWTFile=provisioning\.jwt -o .*\/choria-v0\.29\.4\/choria\.tmp \.$/,
      ),
      'install github.com/choria-io/provisioner@v0.16.0',
    ]);
    expect(existsSync(join(dir, 'peers', 'choria-v0.29.4', 'choria'))).toBe(true);
    expect(existsSync(join(dir, 'peers', 'nats-server-v2.15.3', 'nats-server'))).toBe(true);
  });

  it('says in one line that the proxy refuses the Go provisioner, with its words, and goes on', () => {
    const { code, stderr } = run(['github.com/choria-io/provisioner']);
    expect(code).toBe(0);
    expect(stderr).toContain(
      'go peers: not installed, the proxy refuses it: go: github.com/choria-io/provisioner@v0.16.0: reading https://proxy.golang.org/x: 403 Forbidden',
    );
    expect(existsSync(join(dir, 'peers', 'provisioner-v0.16.0'))).toBe(false);
  });

  it('fails when a peer the specs need cannot be installed', () => {
    expect(run(['github.com/nats-io/nats-server/v2']).code).not.toBe(0);
  });

  it('skips what is already installed: a second run only asks for what is still missing', () => {
    run(['github.com/choria-io/provisioner']);
    rmSync(join(dir, 'calls'));
    const { code, calls } = run(['github.com/choria-io/provisioner']);
    expect(code).toBe(0);
    expect(calls).toEqual(['install github.com/choria-io/provisioner@v0.16.0']);
  });
});

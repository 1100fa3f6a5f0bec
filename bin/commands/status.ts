import { Command, Option } from 'commander';
import { addNatsOptions, durationOption, positiveInt } from '../options';
import type { StatusOptions } from '../status/run';

/** The options `status` and `history` share: where to read, and how to show it. */
function addReadOptions(command: Command): Command {
  command.option(
    '--config <file>',
    "the provisioner's configuration: its records stream and subject, its claims bucket, and rxfleet.nats_* when --nats is not given",
  );
  addNatsOptions(command, { token: true, tls: true });
  return command
    .addOption(
      new Option(
        '--api-prefix <prefix>',
        'the JetStream API prefix of the account holding the stream and buckets ($JS.API there; reading needs consumers, which a Choria provisioning account does not have)',
      ).default('$JS.API'),
    )
    .option('--records-stream <name>', 'the records stream (default: records_stream of --config, else RXFLEET_PROVISIONER_RECORDS)')
    .option(
      '--records-subject <prefix>',
      'the records subject prefix (default: records_subject of --config, else rxfleet.provisioner.records)',
    )
    .option('--claims-bucket <name>', 'the claims bucket (default: claims_bucket of --config, else RXFLEET_PROVISIONER_CLAIMS)')
    .addOption(new Option('--election-bucket <name>', "the leader election's bucket").default('CHORIA_LEADER_ELECTION'))
    .option('--json', 'JSON lines instead of a table')
    .option('--watch', 'look again every --every, redrawn in place on a terminal, until interrupted')
    .addOption(durationOption('--every <duration>', 'how often --watch looks', 2000));
}

/**
 * `rxfleet status [NODE]` and `rxfleet history NODE` (DECISIONS P21): what the fleet is doing and
 * what happened to a node, read from the provisioning records, the claims bucket and the election
 * bucket, with no daemon to ask. Their modules load only when they run.
 */
export function registerStatus(program: Command): void {
  const status = program
    .command('status')
    .argument('[node]', "a node's identity: its cycles, as history shows them")
    .description(
      'what the fleet is doing now, from the provisioning records (rxfleet.records), the claims bucket and the election bucket: instances (leader, standby or active, claims held), nodes waiting, in flight and failing with the longest of each; with NODE, its every cycle',
    );
  addReadOptions(status).action(async (node: string | undefined, options: StatusOptions) => {
    const { runStatus } = await import('../status/run.js');
    process.exitCode = await runStatus(options, node);
  });

  const history = program
    .command('history')
    .argument('<node>', "the node's identity")
    .description('every recorded cycle of a node, newest first, step by step with the reason it stopped; its claim and backoff now');
  addReadOptions(history)
    .option('--limit <n>', 'the newest N cycles only', positiveInt)
    .action(async (node: string, options: StatusOptions) => {
      const { runStatus } = await import('../status/run.js');
      process.exitCode = await runStatus(options, node);
    });
}

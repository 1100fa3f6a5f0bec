import { Command, InvalidArgumentError, Option } from 'commander';
import { addLogOptions, addNatsOptions, durationOption } from '../options';
import type { EventsOptions } from './eventsRun';

/** `--since`: a duration back from now (`10m`), or a time (`2026-12-01T08:00:00Z`); parsed when the command runs. */
function since(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('expected a duration such as 10m or a time such as 2026-12-01T08:00:00Z');
  return value;
}

/** `rxfleet events`: what the enricher published, read back from its stream and its state bucket. */
export function registerEvents(program: Command): void {
  const command = program
    .command('events')
    .usage('[--config <file>] [--since <when>] [--follow] [--project <name>] [--name <name>] [--state] [options]')
    .description(
      "the enriched events the enricher's JetStream stream holds (what happened to web1 this morning), or with --state each instance's current record from its state bucket; --follow keeps printing as they come",
    )
    .option(
      '--config <file>',
      "the enricher's configuration: its outputs.jetstream (servers, stream, subject prefix) and outputs.state (bucket)",
    );
  addNatsOptions(command, { token: true, tls: true })
    .option('--stream <name>', 'the stream (default: outputs.jetstream.stream, else INCUS_EVENTS)')
    .option('--bucket <name>', 'the state bucket (default: outputs.state.bucket, else INCUS_STATE)')
    .option('--subject-prefix <prefix>', 'the subject prefix (default: outputs.jetstream.subject_prefix, else incus.events)')
    .option('--since <when>', 'from this long ago (10m, 2h) or this time (2026-12-01T08:00:00Z) (default: all the stream holds)', since)
    .option('--follow', 'keep printing events as they come, until a signal')
    .option('--project <name>', 'only this project')
    .option('--name <name>', 'only instances (or networks, profiles) of this name')
    .option('--state', "each instance's current record from the state bucket (with --follow, then each change)")
    .addOption(
      new Option(
        '--format <format>',
        'table, or json lines as the enricher publishes them (default: table on a terminal, json otherwise)',
      ).choices(['table', 'json']),
    )
    .addOption(durationOption('--connect-timeout <duration>', 'how long to try to reach NATS', 10_000));
  addLogOptions(command, { defaultLevel: 'warn', stream: 'stderr' }).action(async (options: EventsOptions) => {
    // Loaded when the command runs, so other commands and --help do not pay for JetStream's modules.
    const { runEvents } = await import('./eventsRun.js');
    process.exitCode = await runEvents(options);
  });
}

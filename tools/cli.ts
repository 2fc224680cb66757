import { type ParseArgsConfig, parseArgs } from 'node:util';
import { type Logger, pino } from 'pino';
import type { z } from 'zod';
import { REDACTED_PATHS } from '../src/logger.js';

// The one argument parser of every operator command (tools/*.ts): node:util parseArgs (strict:
// an unknown flag or a flag without its value is an error), then zod for the values. Every
// command answers alike:
// - `-h` / `--help` anywhere: the usage on stdout, exit 0, before the configuration is read or
//   anything is connected;
// - a usage error (unknown flag, missing or bad value, unknown subcommand): the reason and the
//   usage on stderr, exit 2, nothing done;
// - a refusal (the group has members, the operator said no): the reason on stderr, exit 1;
// - any other failure: `<command>: <message>` on stderr, exit 1.
// Logs go to stderr, so stdout stays what the command prints for a reader or a script.

export class UsageError extends Error {}

/** The command will not do what was asked, for a reason it states; nothing was done. */
export class Refusal extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandSpec<S extends z.ZodType> {
  /** The name in messages (`rebuild: …`). */
  readonly name: string;
  /** What --help prints, and a usage error after its reason (see usageText). */
  readonly usage: string;
  /** The flags, as parseArgs takes them; `--help` / `-h` is added. */
  readonly options: Options;
  readonly schema: S;
  /** Subcommands, taken from the first argument (`dead-letters list|show|replay`). */
  readonly commands?: readonly string[];
}

export type CommandLine<T> =
  | { readonly help: true }
  | { readonly help: false; readonly command: string | undefined; readonly args: T };

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

/** Parses argv as the spec says; throws UsageError. Pure: unit-tested without a process. */
export function parseCommandLine<S extends z.ZodType>(
  spec: CommandSpec<S>,
  argv: readonly string[],
): CommandLine<z.infer<S>> {
  const options = { ...spec.options, ...HELP };
  // Help first, whatever else the line holds: `rebuild --help --execute` only prints the usage.
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, tokens: true });
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) return { help: true };

  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: spec.commands !== undefined,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  let command: string | undefined;
  if (spec.commands) {
    const [first, ...more] = parsed.positionals;
    if (first === undefined)
      throw new UsageError(`a command is required: ${spec.commands.join('|')}`);
    if (!spec.commands.includes(first))
      throw new UsageError(`unknown command ${JSON.stringify(first)}`);
    if (more.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(more[0])}`);
    command = first;
  }
  const values = parsed.values as Record<string, unknown>;
  const result = spec.schema.safeParse(values);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => {
      const flag = `--${issue.path.join('.')}`;
      return values[String(issue.path[0])] === undefined
        ? `${flag} is required`
        : `${flag}: ${issue.message}`;
    });
    throw new UsageError(issues.join('; '));
  }
  return { help: false, command, args: result.data };
}

/**
 * Runs a command's main with the parsed arguments and maps the outcome to the exit codes above.
 * `main` runs only for a valid command line, so a usage error or --help never reaches Kafka or
 * Redis.
 */
export function runCommand<S extends z.ZodType>(
  spec: CommandSpec<S>,
  main: (args: z.infer<S>, command: string | undefined) => Promise<void>,
  argv: readonly string[] = process.argv.slice(2),
): void {
  let line: CommandLine<z.infer<S>>;
  try {
    line = parseCommandLine(spec, argv);
  } catch (error) {
    fail(spec, error);
    return;
  }
  if (line.help) {
    process.stdout.write(`${spec.usage}\n`);
    return;
  }
  main(line.args, line.command).catch((error: unknown) => fail(spec, error));
}

function fail(spec: CommandSpec<z.ZodType>, error: unknown): void {
  if (error instanceof UsageError) {
    process.stderr.write(`${spec.name}: ${error.message}\n\n${spec.usage}\n`);
    process.exitCode = 2;
    return;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${spec.name}: ${message}\n`);
  process.exitCode = 1;
}

/**
 * A usage text in the one layout every command shares: the synopsis, how to run it built or
 * from the sources, what it does, its flags (the help flag added), where its settings come from.
 */
export function usageText(u: {
  readonly name: string;
  readonly synopsis: string;
  readonly about: string;
  readonly options: string;
  readonly environment?: string;
}): string {
  return [
    `usage: ${[u.name, u.synopsis].filter((part) => part !== '').join(' ')}`,
    `  run as node dist/tools/${u.name}.js (built) or npx tsx tools/${u.name}.ts (sources)`,
    '',
    u.about,
    '',
    [u.options, '  -h, --help              print this text and exit (connects to nothing)']
      .filter((part) => part !== '')
      .join('\n'),
    '',
    u.environment ??
      'Kafka, Redis and the topic names come from the environment, as for the consumers\n' +
        '(KAFKA_BROKERS, REDIS_URL, REDIS_KEY_PREFIX, CONSUMER_GROUP, TOPIC_*).',
  ].join('\n');
}

export function createCliLogger(options: { level: string; name: string }): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    pino.destination(2),
  );
}

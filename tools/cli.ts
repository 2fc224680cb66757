import { type ParseArgsConfig, parseArgs } from 'node:util';
import { type Logger, pino } from 'pino';
import type { z } from 'zod';
import { REDACTED_PATHS } from '../src/logger.js';

// What the command-line tools share: argument parsing (node:util parseArgs, then zod) and a
// logger on stderr, so stdout stays machine-readable.

export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses `argv` with parseArgs (strict: unknown flags fail), then validates with `schema`. */
export function parseCli<S extends z.ZodType>(
  argv: readonly string[],
  options: Options,
  schema: S,
): z.infer<S> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const parsed = schema.safeParse(values);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`);
    throw new UsageError(issues.join('; '));
  }
  return parsed.data;
}

/** Runs a tool's main: usage errors print the usage and exit 2, other failures exit 1. */
export function runCli(usage: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${usage}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(
        `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    }
  });
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

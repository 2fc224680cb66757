import { PassThrough } from 'node:stream';
import type { LogEntry } from 'kafkajs';
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { forwardedLevel } from '../../consumers/kafka/kafkajs-log.js';
import { parseCommandLine, Refusal, UsageError } from '../../tools/cli.js';
import {
  assertConfirmable,
  busyGroups,
  confirm,
  EXECUTE_OPTIONS,
} from '../../tools/destructive.js';

// The one parser of the operator commands, their confirmation, and the level kafkajs's broker
// answers are logged at: pure, no process, no Kafka.

const spec = {
  name: 't',
  usage: 'usage: t',
  options: { topic: { type: 'string' }, ...EXECUTE_OPTIONS },
  schema: z.object({
    topic: z.string().min(1),
    execute: z.boolean().default(false),
    yes: z.boolean().default(false),
  }),
} as const;

const usageError = (argv: string[]) => {
  try {
    parseCommandLine(spec, argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('parsed');
};

describe('the operator commands parser', () => {
  it('answers --help and -h before anything else on the line, even a bad flag', () => {
    expect(parseCommandLine(spec, ['--help'])).toEqual({ help: true });
    expect(parseCommandLine(spec, ['-h'])).toEqual({ help: true });
    expect(parseCommandLine(spec, ['--execute', '--bogus', '--help'])).toEqual({ help: true });
  });

  it('refuses an unknown flag, a flag without its value and a missing required value', () => {
    expect(usageError(['--topic', 'a', '--bogus'])).toMatch(/Unknown option '--bogus'/);
    expect(usageError(['--topic'])).toMatch(/argument missing/);
    expect(usageError([])).toBe('--topic is required');
    expect(usageError(['--topic', 'a', 'stray'])).toMatch(/positional/);
  });

  it('takes a subcommand as the first argument when the command has them', () => {
    const sub = { ...spec, commands: ['list', 'replay'] };
    expect(parseCommandLine(sub, ['replay', '--topic', 'a'])).toEqual({
      help: false,
      command: 'replay',
      args: { topic: 'a', execute: false, yes: false },
    });
    expect(() => parseCommandLine(sub, ['frob', '--topic', 'a'])).toThrow(/unknown command "frob"/);
    expect(() => parseCommandLine(sub, ['--topic', 'a'])).toThrow(/a command is required/);
  });
});

const terminal = (answer: string) => {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  const output = new PassThrough();
  let asked = '';
  output.on('data', (c) => {
    asked += String(c);
  });
  setImmediate(() => input.write(`${answer}\n`));
  return { terminal: { input, output }, asked: () => asked };
};

describe('confirming a destructive command', () => {
  it('needs --yes when stdin is not a terminal, and says so', () => {
    expect(() => assertConfirmable({ execute: true, yes: false }, { isTTY: false })).toThrow(
      /add --yes/,
    );
    expect(() => assertConfirmable({ execute: true, yes: true }, { isTTY: false })).not.toThrow();
    expect(() => assertConfirmable({ execute: false, yes: false }, { isTTY: false })).not.toThrow();
  });

  it('asks y/N on a terminal: y goes on, anything else is a refusal', async () => {
    const yes = terminal('y');
    await expect(confirm('delete 3 keys?', false, yes.terminal)).resolves.toBeUndefined();
    expect(yes.asked()).toBe('delete 3 keys? [y/N] ');
    await expect(confirm('delete?', false, terminal('').terminal)).rejects.toBeInstanceOf(Refusal);
    await expect(confirm('delete?', false, terminal('no').terminal)).rejects.toThrow(
      /not confirmed/,
    );
  });

  it('names every group that has members', () => {
    expect(busyGroups([{ groupId: 'g.a', state: 'Empty', members: 0 }])).toBeNull();
    expect(
      busyGroups([
        { groupId: 'g.a', state: 'Stable', members: 2 },
        { groupId: 'g.b', state: 'Dead', members: 0 },
      ]),
    ).toBe('g.a has 2 member(s) (Stable): stop its consumer processes first');
  });
});

const entry = (namespace: string, message: string, error?: string): LogEntry => ({
  namespace,
  level: logLevel.ERROR,
  label: 'ERROR',
  log: { timestamp: '', logger: 'kafkajs', message, ...(error && { error }) },
});

describe("kafkajs's log", () => {
  it('logs the broker answers kafkajs retries at debug, as seen on a successful run', () => {
    for (const error of [
      'This server is not the leader for that topic-partition', // create-topics, new partitions
      'There is no leader for this topic-partition as we are in the middle of a leadership election',
      "The coordinator is loading and hence can't process requests for this group", // first replay
      'The group coordinator is not available',
      'This is not the correct coordinator for this group',
    ])
      expect(forwardedLevel(entry('Connection', 'Response ListOffsets(key: 2)', error))).toBe(
        'debug',
      );
  });

  it('keeps every other error at error level', () => {
    const fatal = 'Topic authorization failed';
    expect(forwardedLevel(entry('Connection', 'Response Produce(key: 0)', fatal))).toBe('error');
    expect(forwardedLevel(entry('Connection', 'Connection error: ECONNREFUSED'))).toBe('error');
    expect(
      forwardedLevel(
        entry('Consumer', 'Crash', 'This server is not the leader for that topic-partition'),
      ),
    ).toBe('error');
    expect(forwardedLevel({ ...entry('Connection', 'x'), level: logLevel.WARN })).toBe('warn');
  });
});

import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import type { Admin } from '../consumers/kafka/client.js';
import { Refusal, UsageError } from './cli.js';

// What the destructive commands (rebuild, skip-batch, dead-letters replay) share: a dry run by
// default that prints the plan, `--execute` to act, a confirmation before acting (a y/N
// question on a terminal, `--yes` otherwise), and for the commands that move a consumer group's
// offsets a refusal while the group has members.

export const EXECUTE_OPTIONS = {
  execute: { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
} as const;

export const EXECUTE_HELP = `  --execute               do it (default: a dry run that prints what it would do)
  -y, --yes               with --execute: do not ask (required when stdin is not a terminal)`;

interface Terminal {
  readonly input: Readable & { readonly isTTY?: boolean };
  readonly output: Writable;
}

/**
 * Called first thing by a destructive command: `--execute` without `--yes` and without a
 * terminal to ask on is a usage error before anything is read or connected.
 */
export function assertConfirmable(
  args: { readonly execute: boolean; readonly yes: boolean },
  input: { readonly isTTY?: boolean } = process.stdin,
): void {
  if (args.execute && !args.yes && !input.isTTY)
    throw new UsageError('stdin is not a terminal: add --yes to confirm --execute');
}

/**
 * Resolves once the operator agreed: at once with `yes`, else by a y/N question on a terminal
 * (the question on stderr, stdout keeps the plan). Without a terminal and without `yes` it is a
 * usage error: a script must say so.
 */
export async function confirm(
  question: string,
  yes: boolean,
  terminal: Terminal = { input: process.stdin, output: process.stderr },
): Promise<void> {
  if (yes) return;
  assertConfirmable({ execute: true, yes }, terminal.input);
  const rl = createInterface({ input: terminal.input, output: terminal.output });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new Refusal('not confirmed: nothing done');
  } finally {
    rl.close();
  }
}

export interface GroupState {
  readonly groupId: string;
  readonly state: string;
  readonly members: number;
}

export async function groupStates(
  admin: Admin,
  groupIds: readonly string[],
): Promise<GroupState[]> {
  return Promise.all(
    groupIds.map(async (groupId) => ({ groupId, ...(await admin.describeGroup(groupId)) })),
  );
}

/** What a plan says about groups with members; null when every group is empty. */
export function busyGroups(states: readonly GroupState[]): string | null {
  const busy = states.filter((s) => s.members > 0);
  if (busy.length === 0) return null;
  const named = busy.map((s) => `${s.groupId} has ${s.members} member(s) (${s.state})`);
  return `${named.join(', ')}: stop its consumer processes first`;
}

/** Throws a Refusal while any of the groups has members. */
export function refuseBusy(states: readonly GroupState[]): void {
  const busy = busyGroups(states);
  if (busy) throw new Refusal(`refused, ${busy}`);
}

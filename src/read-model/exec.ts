import type { ChainableCommander } from 'ioredis';

// One way to run a pipeline or MULTI and fail on any command that failed: ioredis reports a
// failed command inside the replies, not as a rejected promise.

type Replies = Array<[Error | null, unknown]> | null;

/** The replies' values, or null when EXEC was aborted (a WATCHed key changed); throws the first error. */
export function valuesOrThrow(replies: Replies): unknown[] | null {
  if (replies === null) return null;
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** Runs a pipeline or an unwatched MULTI; resolves to every reply's value, throws the first error. */
export async function execOrThrow(commands: ChainableCommander): Promise<unknown[]> {
  const values = valuesOrThrow(await commands.exec());
  if (values === null) throw new Error('EXEC aborted without WATCH');
  return values;
}

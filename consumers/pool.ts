// A fixed set of resources (e.g. stores on connections of their own) lent to one caller at a
// time: WATCH state is per connection, so concurrent batches must never share one.

export interface Pool<T> {
  use<R>(work: (item: T) => Promise<R>): Promise<R>;
}

export function createPool<T>(items: readonly T[]): Pool<T> {
  if (items.length === 0) throw new RangeError('a pool needs at least one item');
  const free = [...items];
  const waiting: Array<(item: T) => void> = [];
  return {
    async use(work) {
      const item = free.pop() ?? (await new Promise<T>((resolve) => waiting.push(resolve)));
      try {
        return await work(item);
      } finally {
        const next = waiting.shift();
        if (next) next(item);
        else free.push(item);
      }
    },
  };
}

// A fixed set of resources (e.g. Redis connections) lent to one caller at a time: a connection
// answers in order, so a caller sharing one would wait behind the other's pipelines.

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

import { describe, expect, it } from 'vitest';
import { createRecency, type Linked } from '../../api/near-cache/recency.js';

interface Node extends Linked {
  readonly id: number;
}

const node = (id: number): Node => ({ id, older: null, newer: null });

/** Oldest first, by following the links. */
function order(recency: { readonly oldest: Node | null }): number[] {
  const ids: number[] = [];
  for (let n: Linked | null = recency.oldest; n !== null; n = n.newer) ids.push((n as Node).id);
  return ids;
}

describe('recency list', () => {
  it('gives the least recently used first, whatever was used or removed since', () => {
    const recency = createRecency<Node>();
    const [a, b, c, d] = [1, 2, 3, 4].map(node) as [Node, Node, Node, Node];
    for (const n of [a, b, c]) recency.add(n);
    expect(order(recency)).toEqual([1, 2, 3]);
    recency.touch(a);
    expect(order(recency)).toEqual([2, 3, 1]);
    recency.touch(a);
    expect(order(recency)).toEqual([2, 3, 1]);
    recency.remove(c);
    recency.add(d);
    expect(order(recency)).toEqual([2, 1, 4]);
    recency.remove(b);
    expect(recency.oldest?.id).toBe(1);
    recency.remove(a);
    recency.remove(d);
    expect(recency.oldest).toBeNull();
    recency.add(c);
    expect(order(recency)).toEqual([3]);
  });

  it('finds the oldest at once after many evictions', () => {
    // A Map kept in recency order walks past a hole per eviction to find its first key.
    const recency = createRecency<Node>();
    for (let i = 0; i < 10_000; i++) recency.add(node(i));
    for (let i = 10_000; i < 50_000; i++) {
      recency.remove(recency.oldest as Node);
      recency.add(node(i));
    }
    expect(recency.oldest?.id).toBe(40_000);
    expect(order(recency)).toHaveLength(10_000);
  });
});

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createOwnedState } from '../../consumers/telemetry-state.js';
import { initialState } from '../../src/projection/installation-state.js';

// The partition owner's memory: what the flow sweep relies on to pass a partition by. The bound
// must never be later than a flow it holds or schedules, or that flow would not age.

const withFlow = (id: number, validUntilMs: number) => ({
  ...initialState(id),
  flow: { data: '{}', validUntilMs },
});

describe('partition state: when its next flow is due', () => {
  const owned = () =>
    createOwnedState({ installationsPerPartition: 2, registry: new Registry() }).partition(0);

  it('has nothing due while it holds no expiring flow', () => {
    const part = owned();
    part.set(withFlow(1, 0));
    expect(part.nextDueMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('is due at the earliest flow it holds or schedules', () => {
    const part = owned();
    part.set(withFlow(1, 5_000));
    part.set(withFlow(2, 3_000));
    expect(part.nextDueMs).toBe(3_000);
    part.scheduleEvicted(9, 1_000);
    expect(part.nextDueMs).toBe(1_000);
    expect(part.evictedDue.get(9)).toBe(1_000);
    part.scheduleEvicted(9, 0);
    expect(part.evictedDue.has(9)).toBe(false);
  });

  it('keeps an evicted flow scheduled, so the bound still covers it', () => {
    const part = owned();
    part.set(withFlow(1, 2_000));
    part.set(withFlow(2, 0));
    part.set(withFlow(3, 0));
    expect(part.size).toBe(2);
    expect(part.evictedDue.get(1)).toBe(2_000);
    expect(part.nextDueMs).toBeLessThanOrEqual(2_000);
  });

  it('lowers a bound a sweep raised when a later write brings an earlier flow', () => {
    const part = owned();
    part.set(withFlow(1, 10_000));
    part.recomputeDue();
    expect(part.nextDueMs).toBe(10_000);
    part.set(withFlow(4, 7_000));
    expect(part.nextDueMs).toBe(7_000);
  });

  it('recomputes the bound from what it holds and what it scheduled, once flows were refreshed', () => {
    const part = owned();
    part.set(withFlow(1, 2_000));
    part.scheduleEvicted(9, 4_000);
    // The sweep refreshed installation 1: its flow now never expires.
    part.set(withFlow(1, 0));
    expect(part.nextDueMs).toBe(2_000);
    part.recomputeDue();
    expect(part.nextDueMs).toBe(4_000);
  });
});

describe('owned partitions', () => {
  it('forgets a revoked partition and does not bring it back on a look-up', () => {
    const owned = createOwnedState({ installationsPerPartition: 2, registry: new Registry() });
    owned.partition(0).set(withFlow(1, 1_000));
    owned.retain([1]);
    expect(owned.held(0)).toBeUndefined();
    expect(owned.partitions()).toEqual([]);
  });
});

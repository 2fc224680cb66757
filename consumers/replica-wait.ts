import { isCluster, type RedisClient } from '../src/read-model/redis-connection.js';
import type { Projector } from './projector.js';

// What a batch's acknowledgment waits for before its offsets are committed. By default, the
// master's reply: with AOF and fsync always the write is on the master's disk, but replication
// is asynchronous, so a failover to a replica may lose the last writes. With
// CONSUMER_WAIT_REPLICAS=n the batch also waits (WAIT) until n replicas of every master its
// connections wrote to hold their writes; if they do not within the timeout, the batch fails as
// retriable and is projected again (idempotent), its offsets uncommitted. The price: a master
// whose replicas are all down stops that topic's progress until one is back.

export class ReplicasBehindError extends Error {
  readonly retriable = true;
}

export function waitingForReplicas(
  projector: Projector,
  /** Every connection the projector writes on: which one a batch used is the projector's. */
  conns: readonly RedisClient[],
  replicas: number,
  timeoutMs: number,
): Projector {
  if (replicas === 0) return projector;
  return {
    ...projector,
    async project(batch) {
      const outcome = await projector.project(batch);
      // WAIT counts the writes of the connection it is sent on: every master of each. One
      // another batch is writing on makes this one wait for that batch's writes too (stronger).
      const masters = conns.flatMap((conn) => (isCluster(conn) ? conn.nodes('master') : [conn]));
      const acked = await Promise.all(masters.map((node) => node.wait(replicas, timeoutMs)));
      if (acked.some((n) => n < replicas))
        throw new ReplicasBehindError(
          `writes reached ${Math.min(...acked)} of ${replicas} replicas within ${timeoutMs} ms`,
        );
      return outcome;
    },
  };
}

import { Gauge, type Registry } from 'prom-client';
import { isCluster, type RedisClient } from '../read-model/redis-connection.js';

// Redis memory against its maxmemory, per master, read with INFO memory when scraped: a full
// read model refuses writes (noeviction) or evicts keys, both outages. Named as redis_exporter
// names them, so the same alert reads either. Exported by the consumers only: API replicas
// would each ask every master for the same figures.

/** A scrape does not wait for Redis longer than this; a node that does not answer is left out. */
const INFO_TIMEOUT_MS = 1_000;

export interface RedisMemory {
  readonly usedBytes: number;
  /** 0: no maxmemory set. */
  readonly maxBytes: number;
}

/** used_memory and maxmemory from the text of INFO memory; null when either is missing. */
export function parseInfoMemory(info: string): RedisMemory | null {
  const field = (name: string) => {
    const match = new RegExp(`^${name}:(\\d+)\\r?$`, 'm').exec(info);
    return match ? Number(match[1]) : null;
  };
  const usedBytes = field('used_memory');
  const maxBytes = field('maxmemory');
  return usedBytes === null || maxBytes === null ? null : { usedBytes, maxBytes };
}

export function registerRedisMemoryMetrics(registry: Registry, redis: RedisClient): void {
  // The registry collects its metrics at once: both gauges share the one read of a scrape.
  let reading: Promise<Map<string, RedisMemory>> | null = null;
  const read = () =>
    (reading ??= readMemory(redis).finally(() => {
      reading = null;
    }));
  new Gauge({
    name: 'redis_memory_used_bytes',
    help: 'used_memory of each Redis master (INFO memory), read when scraped',
    labelNames: ['node'],
    registers: [registry],
    async collect() {
      const memory = await read();
      this.reset();
      for (const [node, m] of memory) this.set({ node }, m.usedBytes);
    },
  });
  new Gauge({
    name: 'redis_memory_max_bytes',
    help: 'maxmemory of each Redis master (0: unlimited), read when scraped',
    labelNames: ['node'],
    registers: [registry],
    async collect() {
      const memory = await read();
      this.reset();
      for (const [node, m] of memory) this.set({ node }, m.maxBytes);
    },
  });
}

async function readMemory(redis: RedisClient): Promise<Map<string, RedisMemory>> {
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
  const read = new Map<string, RedisMemory>();
  await Promise.all(
    nodes.map(async (node) => {
      // Not queued while reconnecting: the scrape would wait for the connection.
      if (node.status !== 'ready') return;
      const info = await withTimeout(node.info('memory'), INFO_TIMEOUT_MS).catch(() => null);
      const memory = info === null ? null : parseInfoMemory(info);
      if (memory) read.set(`${node.options.host}:${node.options.port}`, memory);
    }),
  );
  return read;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

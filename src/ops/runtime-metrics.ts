import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client';
import type { RedisClient } from '../read-model/redis-connection.js';

// What both roles export beside their own counters: the process's CPU, memory and event loop
// (prom-client's standard series, which dashboards and the CPU-per-request rule read) and
// whether its Redis client is connected. Read at scrape time: nothing per request.

export function registerRuntimeMetrics(registry: Registry, redis: RedisClient): void {
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'redis_client_connected',
    help: "1 while this process's Redis client is connected and ready, 0 while it reconnects",
    registers: [registry],
    collect() {
      this.set(redis.status === 'ready' ? 1 : 0);
    },
  });
}

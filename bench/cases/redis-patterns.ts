import { Redis } from 'ioredis';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { createKeys } from '../../src/read-model/keys.js';
import { loadScript } from '../../src/read-model/lua-scripts.js';
import type { BenchContext } from '../lib/context.js';
import { selfCpuSeconds } from '../lib/cpu.js';
import { printRow, type Row } from '../lib/report.js';
import { REDIS_URL } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import type { Workload } from '../workload/plan.js';

// The API's Redis access for getInstallationCurrentEnergyFlow, in isolation: 64 concurrent
// callers in this process, each doing what one request does: the pipeline of HMGET keyStatus + the
// read-flow script the API used to send (the reference) against alternatives, one of them the
// API's current path (EVALSHA alone). Uses api/lua/read-flow-4.lua
// through the project's loader, so its access check is included.

type Pattern = (keyHash: string, id: number) => Promise<unknown>;

export async function redisPatternCases(
  ctx: BenchContext,
  w: Workload,
  prefix: string,
): Promise<void> {
  const keys = createKeys(prefix);
  const readFlow = loadScript(new URL('../../api/lua/', import.meta.url), 'read-flow-4.lua', {
    readOnly: true,
  });
  const plain = new Redis(REDIS_URL);
  const auto = new Redis(REDIS_URL, { enableAutoPipelining: true });
  for (const c of [plain, auto]) c.defineCommand('readFlow', readFlow);
  type WithScript = Redis & { readFlow(...args: Array<string | number>): Promise<unknown> };
  const args = (c: Redis, h: string, id: number) =>
    (c as WithScript).readFlow(
      keys.acl(id),
      keys.installation(id),
      keys.flow(id),
      keys.devices(id),
      h,
      Date.now(),
    );
  const pairs = w.pairs.map(([key, id]) => [hashApiKey(key), id] as const);
  const patterns: Array<[string, Pattern]> = [
    [
      'explicit pipeline: HMGET keyStatus + EVALSHA (the API before)',
      async (h, id) => {
        const p = plain.pipeline();
        p.hmget(keys.keyStatus(h), 'app', 'exp');
        (p as unknown as { readFlow(...a: Array<string | number>): void }).readFlow(
          keys.acl(id),
          keys.installation(id),
          keys.flow(id),
          keys.devices(id),
          h,
          Date.now(),
        );
        return p.exec();
      },
    ],
    [
      'EVALSHA alone (as shipped: acl entry proves the key live; keyStatus only on a miss)',
      (h, id) => args(plain, h, id),
    ],
    [
      'auto-pipelined plain commands: HMGET keyStatus + EVALSHA',
      (h, id) => Promise.all([auto.hmget(keys.keyStatus(h), 'app', 'exp'), args(auto, h, id)]),
    ],
    ['auto-pipelined EVALSHA alone', (h, id) => args(auto, h, id)],
  ];
  const seconds = ctx.opts.quick ? 2 : 3;
  const run = async (pattern: Pattern) => {
    let ops = 0;
    const until = performance.now() + seconds * 1000;
    const cpu0 = selfCpuSeconds();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (performance.now() < until) {
          const [h, id] = pairs[Math.floor(Math.random() * pairs.length)] as (typeof pairs)[number];
          await pattern(h, id);
          ops++;
        }
      }),
    );
    return { rate: ops / seconds, cpuUs: ((selfCpuSeconds() - cpu0) / ops) * 1e6 };
  };
  for (const [, p] of patterns) await run(p);
  const results = patterns.map(() => ({ rate: [] as number[], cpu: [] as number[] }));
  for (let i = 0; i < 2; i++) {
    for (const [j, [, p]] of patterns.entries()) {
      const r = await run(p);
      results[j]?.rate.push(r.rate);
      results[j]?.cpu.push(r.cpuUs);
    }
  }
  const reference = spread(results[0]?.rate ?? []);
  patterns.forEach(([name], j) => {
    const rate = spread(results[j]?.rate ?? []);
    const row: Row = {
      section: 'experiment: API Redis access, 64 concurrent callers in one process',
      name,
      unit: 'ops/s',
      candidate: rate,
      baseline: reference,
      ratio: rate.median / reference.median,
      note: `client CPU ${spread(results[j]?.cpu ?? []).median.toFixed(1)} µs/op; baseline column = the API before`,
    };
    ctx.rows.push(row);
    printRow(row);
  });
  plain.disconnect();
  auto.disconnect();
}

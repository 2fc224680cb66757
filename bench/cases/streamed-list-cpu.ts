import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compress } from '../../api/http/compression.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { cpuSecondsOf, selfCpuSeconds } from '../lib/cpu.js';
import { numberArg, stringArg } from '../lib/options.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, standalone } from '../lib/standalone.js';
import { median } from '../lib/stats.js';

// Issue 57 item 2, the bench row: the API's CPU per streamed getInstallations (no `limit`, past
// one page of 1,000) in br, gzip and identity, beside a buffered answer of the same bytes: the
// identity list coded in one piece by compression.ts's compress() (the buffered path's coder),
// in this process. Standalone, on its own Redis prefix, which it drops:
//   npx tsx bench/cases/streamed-list-cpu.ts [--installations 2500] [--rounds 10] [--batch 10]
//     [--port 19020]
//     [--main /other/checkout/api/main.ts]
// `--main`: another checkout's API (the quality-11 code before the fix, 998acf6), started the
// same way through bench/servers/api-memory-probe.ts. Rounds alternate the codings (identity,
// gzip, br, identity, …), `batch` requests one at a time per sample; the API's CPU from /proc/<pid>/stat, all its
// threads (the streamed coder runs on libuv's pool); each figure is the median over rounds.

const INSTALLATIONS = numberArg('installations', 2_500);
const ROUNDS = numberArg('rounds', 10);
/** Lists per sample: /proc counts CPU in 10 ms ticks, an identity list costs about that. */
const BATCH = numberArg('batch', 10);
const PORT = numberArg('port', 19020);
const MAIN = stringArg('main');
const CODINGS = ['identity', 'gzip', 'br'] as const;

const bench = standalone('streamed-list');
const key = newApiKey();
const records = Array.from({ length: INSTALLATIONS }, (_, i) => installation(1_000 + i));

/** The unpaged list in `coding`, the bytes as they came on the wire. */
function list(coding: (typeof CODINGS)[number]): Promise<Buffer> {
  const headers: Record<string, string> = { 'api-key': key };
  if (coding !== 'identity') headers['accept-encoding'] = coding;
  return new Promise((resolve, reject) => {
    const req = get(
      { host: '127.0.0.1', port: PORT, path: `${BASE}/getInstallations`, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const encoding = res.headers['content-encoding'] ?? 'identity';
          if (res.statusCode !== 200 || encoding !== coding) {
            reject(new Error(`${coding}: ${res.statusCode}, content-encoding ${encoding}`));
          } else resolve(Buffer.concat(chunks));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

try {
  for (let i = 0; i < records.length; i += 250) {
    await Promise.all(records.slice(i, i + 250).map((r) => bench.seed.installation(r)));
  }
  await bench.seed.liveKey(key, { app: 1, installations: records });
  const api = await bench.api(
    PORT,
    {
      MEMORY_FILE: join(tmpdir(), `${bench.prefix.replace(/[:]/g, '-')}memory.json`),
      ...(MAIN ? { API_MAIN: MAIN } : {}),
    },
    'bench/servers/api-memory-probe.ts',
  );
  const identityBytes = await list('identity');
  for (const coding of CODINGS) await list(coding); // warm-up
  console.log(
    `API ${MAIN ?? 'api/main.ts'}; ${INSTALLATIONS} installations (${(identityBytes.length / 1024).toFixed(0)} KiB), ${ROUNDS} rounds of ${BATCH}; load ${loadAverage()}`,
  );
  const cpu: Record<string, number[]> = {};
  const wall: Record<string, number[]> = {};
  const bytes: Record<string, number> = {};
  const record = (name: string, cpuMs: number, wallMs: number, size: number) => {
    cpu[name] = [...(cpu[name] ?? []), cpuMs];
    wall[name] = [...(wall[name] ?? []), wallMs];
    bytes[name] = size;
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const coding of CODINGS) {
      const cpu0 = cpuSecondsOf(api.pid);
      const t0 = performance.now();
      let body: Buffer = Buffer.alloc(0);
      for (let b = 0; b < BATCH; b++) body = await list(coding);
      const wallMs = (performance.now() - t0) / BATCH;
      const cpuMs = ((cpuSecondsOf(api.pid) - cpu0) * 1000) / BATCH;
      record(`streamed ${coding}`, cpuMs, wallMs, body.length);
    }
    // The same bytes through the buffered path's coder, timed in this process.
    for (const coding of ['gzip', 'br'] as const) {
      const cpu0 = selfCpuSeconds();
      const t0 = performance.now();
      const coded = compress(identityBytes, coding);
      record(
        `buffered compress() ${coding}`,
        (selfCpuSeconds() - cpu0) * 1000,
        performance.now() - t0,
        coded.length,
      );
    }
  }
  const identityCpu = median(cpu['streamed identity'] as number[]);
  // A streamed coded list costs the identity list plus its coding: that extra beside what
  // compress() takes for the same bytes in one piece.
  console.log(
    '| answer | bytes | API CPU per list (median) | wall per list | vs streamed identity | coding CPU (minus identity) | compress() of the same bytes | coding, streamed vs buffered |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const name of Object.keys(cpu)) {
    const c = median(cpu[name] as number[]);
    const coding = name.split(' ').at(-1) as string;
    const buffered = cpu[`buffered compress() ${coding}`];
    const streamedCoded = name.startsWith('streamed') && buffered !== undefined;
    const extra = c - identityCpu;
    const cells = streamedCoded
      ? [
          `${extra.toFixed(1)} ms`,
          `${median(buffered).toFixed(1)} ms`,
          `${(extra / median(buffered)).toFixed(1)}x`,
        ]
      : ['', '', ''];
    console.log(
      `| ${name} | ${(bytes[name] as number).toLocaleString('en')} | ${c.toFixed(1)} ms | ${median(wall[name] as number[]).toFixed(1)} ms | ${(c / identityCpu).toFixed(2)}x | ${cells.join(' | ')} |`,
    );
  }
  console.log(`medians over ${ROUNDS} rounds of ${BATCH} lists each; load after ${loadAverage()}`);
} finally {
  await bench.close();
}

import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compress } from '../../api/http/compression.js';
import { type Installation, serializeInstallation } from '../../src/domain/installation.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { monitorRedis } from '../support/redis-monitor.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';
import { createResponseValidator } from '../support-api/openapi-validator.js';

// beyond.md §7, against a read model written by the consumers' own stores: without parameters
// getInstallations answers the whole list for any number of installations (streamed past one
// page of 1,000, without ETag), `limit` and `cursor` page through it, malformed paging
// parameters are 400 INVALID_PARAMETERS to a live key and 401 to any other, and a revoked key is
// refused on every path. Every success body is checked against the served OpenAPI document.

const UNAUTHORIZED = '{"valid":false,"error":"UNAUTHORIZED"}';
const INVALID = '{"valid":false,"error":"INVALID_PARAMETERS"}';
/** Installations of the large key: past 1,000, so its unpaged list is streamed. */
const LARGE = 20_000;
/** Installations seeded at once: concurrent seeder calls share the connection's round trips. */
const SEED_CONCURRENCY = 500;

/** `{"valid":true,"installations":[…]}` as the API must answer it, `nextCursor` when given. */
const bodyOf = (records: readonly Installation[], nextCursor?: string) =>
  `{"valid":true,"installations":[${records.map(serializeInstallation).join(',')}]${
    nextCursor === undefined ? '' : `,"nextCursor":"${nextCursor}"`
  }}`;
const byId = (a: Installation, b: Installation) => a.id - b.id;

describe.each([
  ['with the view cache', {}],
  ['uncached', { API_NEAR_CACHE_ENTRIES: '0' }],
] as const)('API getInstallations pages and streams (beyond.md §7), %s', (_name, env) => {
  const api = testApi({ env });
  const base = api.config.api.basePath;
  const url = `${base}/getInstallations`;
  const validator = createResponseValidator(base);
  let nextId = 1;
  let nextApp = 1;

  const get = (key: string, query = '', headers: Record<string, string> = {}) =>
    api.app.inject({ url: `${url}${query}`, headers: { 'api-key': key, ...headers } });
  const post = (key: string, payload: string) =>
    api.app.inject({
      method: 'POST',
      url,
      headers: { 'api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      payload,
    });
  /** A live key of `count` new installations, seeded in an order other than their ids'. */
  const keyWith = async (count: number) => {
    // Spaced ids, seeded from the highest down: the answer's order is the API's own.
    const records = Array.from({ length: count }, (_, i) => installation(nextId + 3 * i));
    nextId += 3 * count;
    const seeding = [...records].reverse();
    for (let i = 0; i < seeding.length; i += SEED_CONCURRENCY) {
      await Promise.all(
        seeding.slice(i, i + SEED_CONCURRENCY).map((r) => api.seed.installation(r)),
      );
    }
    const key = newApiKey();
    const app = nextApp++;
    await api.seed.liveKey(key, { app, installations: seeding });
    return { key, app, records: records.sort(byId) };
  };
  /** Every page of `limit` by following nextCursor, each checked against the document. */
  const walk = async (key: string, limit: number) => {
    const pages: Array<{ body: string; etag: unknown; ids: number[]; next?: string }> = [];
    let cursor: string | undefined;
    for (;;) {
      const query = `?limit=${limit}${cursor === undefined ? '' : `&cursor=${cursor}`}`;
      const res = await get(key, query);
      expect(res.statusCode, query).toBe(200);
      const json = res.json();
      validator.assertValid(url, 'GET', 200, json);
      const ids = (json.installations as Installation[]).map((i) => i.id);
      pages.push({ body: res.body, etag: res.headers.etag, ids, next: json.nextCursor });
      if (json.nextCursor === undefined) return pages;
      expect(ids, query).toHaveLength(limit);
      cursor = json.nextCursor;
    }
  };

  let large: { key: string; records: Installation[] };
  let small: { key: string; records: Installation[] };
  let none: { key: string };

  beforeAll(async () => {
    await api.ready();
    large = await keyWith(LARGE);
    small = await keyWith(5);
    none = await keyWith(0);
  });
  afterAll(() => api.close());

  describe('without parameters', () => {
    it('streams the full list of a large key in ascending id order, without ETag', async () => {
      const res = await get(large.key);
      expect(res.statusCode).toBe(200);
      expect(res.headers.etag).toBeUndefined();
      expect(res.headers['transfer-encoding']).toBe('chunked');
      expect(res.headers['content-length']).toBeUndefined();
      expect(res.headers['content-type']).toBe((await get(small.key)).headers['content-type']);
      expect(res.headers['cache-control']).toBe('private, no-cache');
      const json = res.json();
      validator.assertValid(url, 'GET', 200, json);
      const ids = (json.installations as Installation[]).map((i) => i.id);
      expect(ids).toEqual(large.records.map((r) => r.id));
      expect(res.body).toBe(bodyOf(large.records));
      // Streamed, so a request that names the tag it holds still gets the list.
      const again = await get(large.key, '', { 'if-none-match': '"anything"' });
      expect([again.statusCode, again.body === res.body]).toEqual([200, true]);
    });

    it('streams it gzip-encoded when asked, decoding to the same bytes', async () => {
      const identity = await get(large.key);
      const res = await get(large.key, '', { 'accept-encoding': 'gzip' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBe('gzip');
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
      expect(res.headers.etag).toBeUndefined();
      const decoded = gunzipSync(res.rawPayload);
      expect(res.rawPayload.length).toBeLessThan(decoded.length);
      expect(decoded.equals(identity.rawPayload)).toBe(true);
      expect(decoded.toString('utf8')).toBe(bodyOf(large.records));
    });

    it('streams it br-encoded at quality 4 as the buffered path does, not at zlib default 11', async () => {
      const res = await get(large.key, '', { 'accept-encoding': 'br, gzip' });
      expect(res.headers['content-encoding']).toBe('br');
      const decoded = brotliDecompressSync(res.rawPayload);
      expect(decoded.toString('utf8')).toBe(bodyOf(large.records));
      // The same bytes coded in one piece by the buffered path: 45,736 bytes for this list at
      // quality 4, 60,266 at quality 11 (which took 13 s of CPU), 54,814 at quality 5.
      const buffered = compress(decoded, 'br').length;
      expect(Math.abs(res.rawPayload.length - buffered) / buffered).toBeLessThan(0.05);
    });

    it('answers If-None-Match: * with 304 and no list, as a buffered read does', async () => {
      for (const key of [large.key, small.key]) {
        const res = await get(key, '', { 'if-none-match': '*' });
        expect(res.statusCode).toBe(304);
        expect(res.body).toBe('');
      }
    });

    it('answers a POST with If-None-Match: * the list: preconditions are for GET and HEAD', async () => {
      const res = await api.app.inject({
        method: 'POST',
        url,
        headers: { 'api-key': large.key, 'if-none-match': '*' },
      });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(bodyOf(large.records));
    });

    it('answers a HEAD of the streamed list with its head alone, reading no page for it', async () => {
      // Other test files share this Redis: only the commands on this test's keys count.
      const monitor = await monitorRedis(api.prefix);
      try {
        const read = async (method: 'GET' | 'HEAD') => {
          await monitor.take();
          const res = await api.app.inject({
            method,
            url,
            headers: { 'api-key': large.key, 'accept-encoding': 'br' },
          });
          // Fastify would read a HEAD's body stream after the answer ended: a second for that
          // work to show (it cannot make a correct HEAD fail, only let a wrong one pass).
          await new Promise((r) => setTimeout(r, 1_000));
          return { res, commands: await monitor.take() };
        };
        const got = await read('GET');
        const head = await read('HEAD');
        expect([head.res.statusCode, head.res.rawPayload.length]).toEqual([200, 0]);
        expect(head.res.headers['content-encoding']).toBe('br');
        expect(head.res.headers['content-type']).toBe(got.res.headers['content-type']);
        // The GET reads the list's 20 pages; the HEAD none past the first.
        expect(got.commands.length, JSON.stringify(got.commands)).toBeGreaterThanOrEqual(
          head.commands.length + LARGE / 1_000 - 1,
        );
      } finally {
        monitor.stop();
      }
    });

    it('answers a small key in one body with an ETag, and 304 to its tag', async () => {
      const res = await get(small.key);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(bodyOf(small.records));
      expect(res.headers['content-length']).toBe(String(res.rawPayload.length));
      validator.assertValid(url, 'GET', 200, res.json());
      const etag = res.headers.etag as string;
      expect(etag).toMatch(/^"[^"]+"$/);
      const revalidated = await get(small.key, '', { 'if-none-match': etag });
      expect([revalidated.statusCode, revalidated.body]).toEqual([304, '']);
      expect(revalidated.headers.etag).toBe(etag);
    });
  });

  describe('limit and cursor', () => {
    it('walks pages of 7 by nextCursor to exactly the full list, the last without nextCursor', async () => {
      const { key, records } = await keyWith(50);
      const pages = await walk(key, 7);
      expect(pages.map((p) => p.ids.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 1]);
      const ids = pages.flatMap((p) => p.ids);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual(records.map((r) => r.id));
      // Byte for byte: each page is its slice of the list, then its cursor.
      for (const [i, page] of pages.entries())
        expect(page.body).toBe(bodyOf(records.slice(7 * i, 7 * i + 7), page.next));
      expect(pages.at(-1)?.next).toBeUndefined();
    });

    it('ends on a full last page without nextCursor', async () => {
      const { key, records } = await keyWith(14);
      const pages = await walk(key, 7);
      expect(pages.map((p) => p.ids)).toEqual([
        records.slice(0, 7).map((r) => r.id),
        records.slice(7).map((r) => r.id),
      ]);
      expect(pages[1]?.body).toBe(bodyOf(records.slice(7)));
    });

    it('gives each page an ETag and 304 to it, first page and later ones', async () => {
      const { key } = await keyWith(10);
      const first = await get(key, '?limit=4');
      const cursor = first.json().nextCursor as string;
      const second = await get(key, `?limit=4&cursor=${cursor}`);
      for (const [query, res] of [
        ['?limit=4', first],
        [`?limit=4&cursor=${cursor}`, second],
      ] as const) {
        const etag = res.headers.etag as string;
        expect(etag, query).toMatch(/^"[^"]+"$/);
        const revalidated = await get(key, query, { 'if-none-match': etag });
        expect([revalidated.statusCode, revalidated.body], query).toEqual([304, '']);
      }
      expect(second.headers.etag).not.toBe(first.headers.etag);
    });

    it('pages the large key by 1,000 to the same list the stream gives', async () => {
      const pages = await walk(large.key, 1_000);
      expect(pages).toHaveLength(LARGE / 1_000);
      expect(pages.flatMap((p) => p.ids)).toEqual(large.records.map((r) => r.id));
    });

    it('answers a key of no installation an empty page without nextCursor', async () => {
      for (const query of ['', '?limit=7']) {
        const res = await get(none.key, query);
        expect([res.statusCode, res.body], query).toEqual([200, bodyOf([])]);
      }
    });

    it('never repeats an installation across pages when grants change between them', async () => {
      const { key, app, records } = await keyWith(20);
      const first = await get(key, '?limit=7');
      const seen = (first.json().installations as Installation[]).map((i) => i.id);
      // Between two pages: a grant goes for a seen and an unseen installation, one is added.
      const gone = records[2] as Installation;
      const unseen = records[15] as Installation;
      await api.seed.removeGrant(key, gone.id);
      await api.seed.removeGrant(key, unseen.id);
      const added = installation(nextId);
      nextId += 3;
      await api.seed.installation(added);
      await api.seed.liveKey(key, { app, installations: [added] });
      // The later pages from the first page's cursor, as they stand now.
      let cursor = first.json().nextCursor as string;
      const later: number[] = [];
      for (;;) {
        const json = (await get(key, `?limit=7&cursor=${cursor}`)).json();
        later.push(...(json.installations as Installation[]).map((i) => i.id));
        if (json.nextCursor === undefined) break;
        cursor = json.nextCursor;
      }
      const all = [...records, added].map((r) => r.id);
      // The seen one stays seen; the unseen one is gone; the added one comes last.
      expect([...seen, ...later]).toEqual(all.filter((id) => id !== unseen.id));
      // A walk from the start is the list as it stands.
      const now = (await walk(key, 7)).flatMap((p) => p.ids);
      expect(now).toEqual(all.filter((id) => id !== gone.id && id !== unseen.id));
    });

    it('takes limit and cursor from a form body too', async () => {
      const first = await post(small.key, 'limit=2');
      expect(first.statusCode).toBe(200);
      const cursor = first.json().nextCursor as string;
      const rest = await post(small.key, `limit=3&cursor=${cursor}`);
      expect(rest.body).toBe(bodyOf(small.records.slice(2)));
    });
  });

  describe('malformed paging parameters', () => {
    let cursor: string;
    let malformed: string[];
    beforeAll(async () => {
      cursor = (await get(small.key, '?limit=2')).json().nextCursor;
      // A cursor is valid only as the API wrote it.
      const tampered = [
        `${cursor}A`,
        `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}=`,
        `${cursor.charAt(0) === 'Z' ? 'Y' : 'Z'}${cursor.slice(1)}`,
        Buffer.from(Buffer.from(cursor, 'base64url').toString('latin1').replace(':', ';')).toString(
          'base64url',
        ),
        Buffer.from('a:1.5').toString('base64url'),
        Buffer.from('a:99999999999999999999').toString('base64url'),
      ];
      malformed = [
        '?limit=0',
        '?limit=1001',
        '?limit=-1',
        '?limit=abc',
        '?limit=',
        '?limit=1e2',
        '?limit=7.0',
        '?limit=%207',
        '?limit=5&limit=5',
        '?limit=5&limit=6',
        '?limit=7&cursor=%21%21%21',
        '?limit=7&cursor=garbage',
        '?limit=7&cursor=',
        `?cursor=${cursor}`,
        `?limit=7&cursor=${cursor}&cursor=${cursor}`,
        ...tampered.map((t) => `?limit=7&cursor=${encodeURIComponent(t)}`),
      ];
    });

    it('answers 400 INVALID_PARAMETERS to a live key', async () => {
      for (const query of malformed) {
        const res = await get(small.key, query);
        expect([res.statusCode, res.body], query).toEqual([400, INVALID]);
        validator.assertValid(`${base}/getInstallations`, 'GET', 400, res.json());
      }
      for (const payload of ['limit=0', 'limit=abc', `cursor=${cursor}`, 'limit=2&cursor=x']) {
        const res = await post(small.key, payload);
        expect([res.statusCode, res.body], payload).toEqual([400, INVALID]);
      }
    });

    it('answers 401 to an unknown key whatever the parameters', async () => {
      const unknown = newApiKey();
      for (const query of [...malformed, '', '?limit=7', `?limit=7&cursor=${cursor}`]) {
        const res = await get(unknown, query);
        expect([res.statusCode, res.body], query).toEqual([401, UNAUTHORIZED]);
      }
      const res = await post(unknown, 'limit=0');
      expect([res.statusCode, res.body]).toEqual([401, UNAUTHORIZED]);
    });
  });

  describe('a revoked key', () => {
    it('is refused on paged and unpaged requests, its cursors too', async () => {
      const { key } = await keyWith(10);
      const cursor = (await get(key, '?limit=3')).json().nextCursor as string;
      const statuses = async (apiKey: string) =>
        Promise.all(
          ['', '?limit=3', `?limit=3&cursor=${cursor}`, '?limit=0'].map(
            async (query) => (await get(apiKey, query)).statusCode,
          ),
        );
      expect(await statuses(key)).toEqual([200, 200, 200, 400]);
      await api.seed.revokeKey(key);
      await refusedWithin('revoked', Date.now(), () => statuses(key), [401, 401, 401, 401]);
    });

    it('is refused before its large list is streamed', async () => {
      expect((await get(large.key, '?limit=1')).statusCode).toBe(200);
      await api.seed.revokeKey(large.key);
      await refusedWithin(
        'revoked large key',
        Date.now(),
        async () =>
          Promise.all(
            ['', '?limit=1000'].map(async (query) => {
              const res = await get(large.key, query, { 'accept-encoding': 'gzip' });
              return [res.statusCode, res.headers['content-encoding'] ?? null, res.body];
            }),
          ),
        [
          [401, null, UNAUTHORIZED],
          [401, null, UNAUTHORIZED],
        ],
      );
    });
  });
});

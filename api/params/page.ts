import { parseIntegerParam, pickParam } from './installation-id.js';

// `limit` and `cursor` of getInstallations (beyond.md §7): absent, the whole list as read-api.md
// describes it; `limit` (1 to MAX_PAGE_LIMIT) asks for one page, `cursor` (a previous page's
// `nextCursor`, with `limit`) continues after it. The cursor is opaque to clients: the last id
// of the page before, base64url-encoded, so nothing of it is worth building by hand.

export const MAX_PAGE_LIMIT = 1_000;

export type PageParams =
  | {
      readonly ok: true;
      readonly page: { readonly afterId: number | null; readonly limit: number } | null;
    }
  | { readonly ok: false; readonly error: 'INVALID_PARAMETERS' };

const INVALID = { ok: false, error: 'INVALID_PARAMETERS' } as const;
const CURSOR_PREFIX = 'a:';
const LIMIT = /^[0-9]{1,4}$/;

type Source = Record<string, unknown> | null | undefined;

export function parsePage(query: Source, body: Source): PageParams {
  const limit = pickParam(query, body, 'limit');
  const cursor = pickParam(query, body, 'cursor');
  if (limit === undefined) return cursor === undefined ? { ok: true, page: null } : INVALID;
  if (typeof limit !== 'string' || !LIMIT.test(limit)) return INVALID;
  const size = Number(limit);
  if (size < 1 || size > MAX_PAGE_LIMIT) return INVALID;
  if (cursor === undefined) return { ok: true, page: { afterId: null, limit: size } };
  const afterId = idOfCursor(cursor);
  return afterId === null ? INVALID : { ok: true, page: { afterId, limit: size } };
}

export function cursorAfter(id: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${id}`, 'latin1').toString('base64url');
}

function idOfCursor(cursor: unknown): number | null {
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('latin1');
  if (!text.startsWith(CURSOR_PREFIX) || cursorAfter(Number(text.slice(2))) !== cursor) return null;
  const id = parseIntegerParam(text.slice(CURSOR_PREFIX.length));
  return id.ok ? id.id : null;
}

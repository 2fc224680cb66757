// A reply's Buffers are views into the socket chunk they arrived in (ioredis decodes without
// copying), and a chunk holds other requests' replies too: one kept view keeps the whole chunk
// alive, up to 64 KB for a few hundred bytes. What a cache keeps is copied out first, into one
// allocation of exactly its size (not the shared pool, whose slabs other allocations share).

/** The same bytes in one allocation of their own, as views in the same order. */
export function packed(buffers: readonly Buffer[]): Buffer[] {
  let size = 0;
  for (const b of buffers) size += b.length;
  const store = Buffer.allocUnsafeSlow(size);
  const out: Buffer[] = new Array(buffers.length);
  let at = 0;
  for (let i = 0; i < buffers.length; i++) {
    const b = buffers[i] as Buffer;
    b.copy(store, at);
    out[i] = store.subarray(at, at + b.length);
    at += b.length;
  }
  return out;
}

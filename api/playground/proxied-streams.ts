import { createHash } from 'node:crypto';

// How many streams the playground proxy relays at once: `max` in all, `perCredential` for one
// key. The upstream stream is a real one, so the API's own caps per key, application and client
// apply to it as well; these keep a try-it page from holding the proxy's upstream pool. A slot is
// held from before the upstream request until the relayed stream ends.

export interface ProxiedStreams {
  /** A release function, or null when a cap is reached. */
  take(credential: string): (() => void) | null;
  readonly open: number;
}

export function createProxiedStreams(limits: {
  readonly max: number;
  readonly perCredential: number;
}): ProxiedStreams {
  const byCredential = new Map<string, number>();
  let open = 0;
  return {
    get open() {
      return open;
    },
    take(credential) {
      // Held by digest: a key is not kept in memory longer than its request.
      const party = createHash('sha256').update(credential).digest('base64');
      const held = byCredential.get(party) ?? 0;
      if (open >= limits.max || held >= limits.perCredential) return null;
      open++;
      byCredential.set(party, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        open--;
        const left = (byCredential.get(party) ?? 1) - 1;
        if (left <= 0) byCredential.delete(party);
        else byCredential.set(party, left);
      };
    },
  };
}

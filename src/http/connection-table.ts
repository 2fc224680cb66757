// Who may hold a connection (docs/security.md, "Connections"). Each client (client-address.ts)
// may hold up to `perClient` connections. While the listener holds fewer than `max`, any client
// under its own cap is admitted. At `max`, a newcomer is admitted by closing a connection of
// the client holding the most, when that client holds more than the newcomer's would: an idle
// one first (between requests, or one still sending its headers), else its oldest (a stream, a
// slow reader). A client that is itself the biggest holder may only trade one of its own idle
// connections for the new one. So one address never takes more than an equal share from the
// others once the listener is full, and a busy poller under its cap is refused only when it
// already holds the most. Pure: the caller says which connections are idle.

export type Verdict<S> =
  | { readonly admit: true /** Close this one to make room. */; readonly evict: S | null }
  | { readonly admit: false; readonly reason: 'per-client' | 'max-connections' };

export interface TableLimits {
  readonly max: number;
  /** 0: no cap per client (the global one still shares fairly when full). */
  readonly perClient: number;
}

const ADMIT: Verdict<never> = { admit: true, evict: null };

export class ConnectionTable<S> {
  private readonly byClient = new Map<string, Set<S>>();
  private count = 0;

  constructor(
    private readonly limits: TableLimits,
    private readonly isIdle: (connection: S) => boolean,
    /** Clients held only to `max` (trusted proxies: all their clients share their address). */
    private readonly uncapped: (client: string) => boolean = () => false,
  ) {}

  get size(): number {
    return this.count;
  }

  holding(client: string): number {
    return this.byClient.get(client)?.size ?? 0;
  }

  /** Whether `client` may open one more connection, and what to close for it. */
  decide(client: string): Verdict<S> {
    const own = this.byClient.get(client);
    const held = own?.size ?? 0;
    const { max, perClient } = this.limits;
    if (perClient > 0 && held >= perClient && !this.uncapped(client)) {
      return { admit: false, reason: 'per-client' };
    }
    if (this.count < max) return ADMIT;
    const biggest = this.biggest(client);
    if (biggest !== undefined && biggest.size > held + 1) {
      return { admit: true, evict: this.idleOf(biggest) ?? (first(biggest) as S) };
    }
    const idle = own && this.idleOf(own);
    if (idle !== undefined) return { admit: true, evict: idle };
    return { admit: false, reason: 'max-connections' };
  }

  add(client: string, connection: S): void {
    let set = this.byClient.get(client);
    if (set === undefined) {
      set = new Set();
      this.byClient.set(client, set);
    }
    if (set.has(connection)) return;
    set.add(connection);
    this.count++;
  }

  remove(client: string, connection: S): void {
    const set = this.byClient.get(client);
    if (set === undefined || !set.delete(connection)) return;
    this.count--;
    if (set.size === 0) this.byClient.delete(client);
  }

  /** The connections of the client holding the most, other than `except`. */
  private biggest(except: string): Set<S> | undefined {
    let found: Set<S> | undefined;
    for (const [client, set] of this.byClient) {
      if (client !== except && (found === undefined || set.size > found.size)) found = set;
    }
    return found;
  }

  private idleOf(set: Set<S>): S | undefined {
    for (const connection of set) if (this.isIdle(connection)) return connection;
    return undefined;
  }
}

function first<S>(set: Set<S>): S | undefined {
  for (const connection of set) return connection;
  return undefined;
}

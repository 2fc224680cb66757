// cluster-key-slot (ioredis's own slot function) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key (its hash tag when it has one). */
  export default function calculateSlot(key: string | Buffer): number;
}

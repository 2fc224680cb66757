import type { Rejection } from './dead-letter.js';
import type { KafkaBatch } from './kafka/client.js';

// What a topic's runner asks of its projector: the runner and the batch handler both use it,
// the projectors implement it.

export interface BatchOutcome {
  readonly rejections: readonly Rejection[];
}

export interface Projector {
  /** Projects a batch; throws when it failed (the runner retries or isolates the culprit). */
  project(batch: KafkaBatch): Promise<BatchOutcome>;
}

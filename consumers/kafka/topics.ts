import type { Config } from '../../src/config.js';
import type { TopicSpec } from './client.js';

/**
 * The device-move protocol's topic (docs/events.md: internal). It belongs to one read model,
 * named after the consumer group that projects it: its releases are instructions to that
 * model's state, so a second model fed by the same telemetry (a rebuild beside the live one,
 * blue/green) never applies the first one's, out of order with its own telemetry. Producers
 * never write it; the telemetry topic refuses its events.
 */
export const deviceMovesTopic = (groupId: string): string => `${groupId}.device-moves`;

export const deviceMovesSpec = (groupId: string): TopicSpec => ({
  topic: deviceMovesTopic(groupId),
  numPartitions: 3,
  cleanupPolicy: 'delete',
});

/** The topics of events.md with their cleanup policies; telemetry spreads over partitions. */
export function topicSpecs(
  topics: Config['topics'],
  telemetryPartitions = 6,
): readonly TopicSpec[] {
  return [
    { topic: topics.installations, numPartitions: 3, cleanupPolicy: 'compact' },
    { topic: topics.telemetry, numPartitions: telemetryPartitions, cleanupPolicy: 'delete' },
    { topic: topics.access, numPartitions: 3, cleanupPolicy: 'compact' },
    { topic: topics.deadletter, numPartitions: 3, cleanupPolicy: 'delete' },
  ];
}

// Reads writer schemas from a Confluent-compatible schema registry (Apicurio's
// /apis/ccompat/v7, Confluent's own) by id. Ids are immutable, so an answer is cached for the
// life of the process by the caller. An unknown id (404) is the message's fault; anything else
// that keeps an answer from us (refused connection, timeout, 5xx, a refused credential) is the
// registry's, and retriable: the batch waits, no valid message is dead-lettered for it.

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export interface RegisteredSchema {
  readonly schemaType: SchemaType | string;
  readonly schema: string;
}

export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
  readonly retriable = true;
}

export interface RegistryClient {
  /** The writer schema of `id`, or null when the registry knows no such id. */
  schemaById(id: number): Promise<RegisteredSchema | null>;
}

export interface RegistryClientOptions {
  /** Base URL of the Confluent-compatible API, e.g. http://127.0.0.1:18081/apis/ccompat/v7 */
  readonly url: string;
  readonly timeoutMs: number;
}

export function createRegistryClient({ url, timeoutMs }: RegistryClientOptions): RegistryClient {
  const base = url.replace(/\/+$/, '');
  return {
    async schemaById(id) {
      let response: Response;
      try {
        response = await fetch(`${base}/schemas/ids/${id}`, {
          headers: { accept: 'application/vnd.schemaregistry.v1+json, application/json' },
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        // The URL may carry credentials: name the host only.
        throw new RegistryUnavailableError(
          `schema registry at ${new URL(base).host} unreachable: ${(error as Error).name}`,
          { cause: error },
        );
      }
      if (response.status === 404) {
        await response.body?.cancel();
        return null;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new RegistryUnavailableError(
          `schema registry answered ${response.status} for schema id ${id}`,
        );
      }
      const body = (await response.json()) as { schema?: unknown; schemaType?: unknown };
      if (typeof body.schema !== 'string') {
        throw new RegistryUnavailableError(`schema registry sent no schema for id ${id}`);
      }
      // Confluent leaves the type out for Avro; a type this service does not read is the
      // decoder's to refuse.
      const schemaType = typeof body.schemaType === 'string' ? body.schemaType : 'AVRO';
      return { schemaType, schema: body.schema };
    },
  };
}

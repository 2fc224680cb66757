import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../api/openapi/openapi-document.js';

// Checks a response against the OpenAPI document: the schema of its path, method and status.

type Json = Record<string, unknown>;

export interface ResponseValidator {
  /** Throws with the schema errors when the body does not match. */
  assertValid(path: string, method: string, status: number, body: unknown): void;
}

export function createResponseValidator(basePath = '/application/v1'): ResponseValidator {
  const doc = buildOpenApiDocument(basePath) as Json & {
    paths: Record<string, Record<string, { responses: Record<string, Json> }>>;
    components: { schemas: Record<string, Json> };
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
  const cache = new Map<string, ReturnType<Ajv2020['compile']>>();
  return {
    assertValid(path, method, status, body) {
      const relative = path.startsWith(basePath) ? path.slice(basePath.length) : path;
      const op = doc.paths[relative.split('?')[0] ?? '']?.[method.toLowerCase()];
      const response = op?.responses[String(status)] as
        | { content: { 'application/json': { schema: { $ref: string } } } }
        | undefined;
      if (!response) throw new Error(`no documented response for ${method} ${path} ${status}`);
      const ref = response.content['application/json'].schema.$ref.replace('#', 'openapi#');
      let validate = cache.get(ref);
      if (!validate) {
        validate = ajv.compile({ $ref: ref });
        cache.set(ref, validate);
      }
      if (!validate(body)) {
        throw new Error(
          `${method} ${path} ${status} does not match ${ref}: ${ajv.errorsText(validate.errors)}`,
        );
      }
    },
  };
}

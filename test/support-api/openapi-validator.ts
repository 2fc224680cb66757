import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../api/openapi/openapi-document.js';

// Checks a response against the OpenAPI document: the schema of its path, method and status.

type Json = Record<string, unknown>;

export interface ResponseValidator {
  /** Throws with the schema errors when the body does not match. */
  assertValid(path: string, method: string, status: number, body: unknown): void;
  /** Whether the document lists `status` for this operation (false for a path it lacks). */
  declares(path: string, method: string, status: number): boolean;
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
  const responseOf = (path: string, method: string, status: number) => {
    const relative = path.startsWith(basePath) ? path.slice(basePath.length) : path;
    const op = doc.paths[relative.split('?')[0] ?? '']?.[method.toLowerCase()];
    return op?.responses[String(status)] as
      | { content?: { 'application/json': { schema: { $ref: string } } } }
      | undefined;
  };
  return {
    declares: (path, method, status) => responseOf(path, method, status) !== undefined,
    assertValid(path, method, status, body) {
      const response = responseOf(path, method, status);
      if (!response) throw new Error(`no documented response for ${method} ${path} ${status}`);
      // HEAD: no body to check.
      if (!response.content) return;
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

import { buildOpenApiDocument } from './openapi-document.js';

/** The base path the committed document describes (read-api.md: `application/v1`). */
export const DEFAULT_BASE_PATH = '/application/v1';

export function openApiFileContent(basePath: string): string {
  return `${JSON.stringify(buildOpenApiDocument(basePath), null, 2)}\n`;
}

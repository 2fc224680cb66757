// Headers every API answer carries (success and error alike), as one frozen object so a reply
// costs one assignment. The key travels in a header, so no shared cache may store an answer
// (`private`), and a client revalidates before reuse (`no-cache`, as conditional reads expect).
// `nosniff`: a JSON body is never run as script or styles, whatever a browser guesses.
export const API_HEADERS = Object.freeze({
  'cache-control': 'private, no-cache',
  'x-content-type-options': 'nosniff',
});

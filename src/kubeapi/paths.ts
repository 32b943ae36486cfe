// The paths the Kubernetes API answers (/version, /api, /apis); the entry points send everything else to the podsync
// app. Apart from routes.ts so an entry can route without loading the Kubernetes API until its first request.

/** The paths this app answers; the entry points send everything else to the podsync app. */
export const isKubePath = (path: string) =>
  path === "/version" ||
  path === "/version/" ||
  path === "/api" ||
  path.startsWith("/api/") ||
  path === "/apis" ||
  path.startsWith("/apis/") ||
  path === "/openapi" ||
  path.startsWith("/openapi/");

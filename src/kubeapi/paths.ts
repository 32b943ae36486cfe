// Package kubeapi/ — the Kubernetes API's read side for kubectl (HTTP layer): discovery, Table, watch, events, exec.
// Imports the agent's feeds, the front door's types, auth/ and below (http/ handlers: listed debt); never an entry.
//
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

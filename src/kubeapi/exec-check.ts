// The exec (and port-forward) checks both exec paths share (Node's WebSocket upgrade in exec-stream.ts, and the Kubernetes API app's
// refusals in routes.ts), apart from the WebSocket code so the Worker's bundle needs no Node socket library.
import type { ReadScope } from "../auth/read-token.js";
import { forbidden } from "./status.js";

export const EXEC_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/;

/** Exec is allowed on this node and by this token; else 403 naming what is missing. */
export function checkExec(scope: ReadScope, allowExec: boolean, name: string): void {
  if (!allowExec)
    throw forbidden("pods", name, "exec is off on this node (the node owner enables it with PODSYNC_ALLOW_EXEC=true)");
  if (!scope.exec)
    throw forbidden(
      "pods",
      name,
      "this read token does not allow exec: make the kubeconfig with podsync kubeconfig --exec",
    );
}

export const PORT_FORWARD_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/portforward$/;

/** Port-forward is allowed on this node and by this token; else 403 naming what is missing. */
export function checkPortForward(scope: ReadScope, allowPortForward: boolean, name: string): void {
  if (!allowPortForward)
    throw forbidden(
      "pods",
      name,
      "port-forward is off on this node (the node owner enables it with PODSYNC_ALLOW_PORT_FORWARD=true)",
    );
  if (!scope.portForward)
    throw forbidden(
      "pods",
      name,
      "this read token does not allow port-forward: make the kubeconfig with podsync kubeconfig --port-forward",
    );
}

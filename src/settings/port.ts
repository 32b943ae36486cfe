// The Node server's default port, shared by the server's settings and the CLI's default URL (a module of its own,
// so the CLI does not load the settings schema).
//
// 8484, not 8080: 8080 is where kubectl looks when it has no kubeconfig (and what every other dev server takes),
// so a podsync there answers kubectl by accident; and not 10250, the kubelet's port, since podsync does not serve
// the kubelet API.
export const DEFAULT_PORT = 8484;
export const DEFAULT_HOST = "127.0.0.1";

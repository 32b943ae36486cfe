// hostPath prefix matching for the node's allow-list. Matching is on normalised absolute paths and whole
// path components, so /srv/data admits /srv/data and /srv/data/x but not /srv/database or /srv/data/../etc.
// It is lexical: a symlink inside an allowed directory still resolves wherever it points on the host
// (see the note on writable allowed directories in docs/security.md).

/** POSIX normalisation of an absolute path: collapses //, . and .. (never above /), drops a trailing /. */
export function normalizeHostPath(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}

/** Whether `path` is `prefix` or inside it, component-wise, after normalising both. */
export function isUnderPrefix(path: string, prefix: string): boolean {
  if (!path.startsWith("/")) return false;
  const p = normalizeHostPath(path);
  const pre = normalizeHostPath(prefix);
  return pre === "/" || p === pre || p.startsWith(`${pre}/`);
}

export function isUnderAny(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((pre) => isUnderPrefix(path, pre));
}

// What `podsync get TYPE` needs of a resource type: how to list it and how kubectl prints it as a table.
// A new type is one file here exporting a Resource as default, and one line in index.ts.
import type { Ctx } from "../client.js";

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    creationTimestamp?: string | null;
  };
  [field: string]: unknown;
}

export interface Listed {
  items: KubeObject[];
  /** Notes for stderr (not part of the result: pipes see only the objects). */
  notes?: string[];
}

export interface Resource {
  /** kubectl's Kind, e.g. "Pod"; `-o name` prints its lower-case plural-less form ("pod/web"). */
  kind: string;
  /** Every object of the type on the node, in all namespaces (get filters by namespace, name and labels). */
  list(ctx: Ctx): Promise<Listed>;
  /** The node's Kubernetes API path that lists every object of the type (all namespaces), for --watch; without
   * one, --watch polls list(). */
  watchPath?: string;
  /** The table's header, and a row per object; `wide` is -o wide's extra columns. */
  header(o: { wide: boolean }): string[];
  row(obj: KubeObject, o: { wide: boolean; now: number; node: string }): string[];
}

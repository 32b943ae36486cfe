// Label and annotation keys exactly as kubelet writes them (pkg/kubelet/kuberuntime/labels.go and
// pkg/kubelet/types/labels.go), so crictl, log collectors and a later kubelet recognise our pods.
export const POD_NAME_LABEL = "io.kubernetes.pod.name";
export const POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace";
export const POD_UID_LABEL = "io.kubernetes.pod.uid";
export const CONTAINER_NAME_LABEL = "io.kubernetes.container.name";
export const KUBERNETES_MANAGED_LABEL = "io.kubernetes.managed-by";

export const CONTAINER_HASH_ANNOTATION = "io.kubernetes.container.hash";
export const CONTAINER_RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount";
export const CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath";
export const CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION = "io.kubernetes.container.terminationMessagePolicy";
export const CONTAINER_PORTS_ANNOTATION = "io.kubernetes.container.ports";
/** kubelet's containerPreStopHandlerLabel: the preStop handler as JSON, so a kill without the spec (DELETE,
 * restoreSpecsFromContainerLabels) still runs it. */
export const CONTAINER_PRESTOP_HANDLER_ANNOTATION = "io.kubernetes.container.preStopHandler";
export const POD_TERMINATION_GRACE_PERIOD_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod";
/** podsync's own: crash-loop back-off streak, so back-off survives a restart of this stateless function. */
export const CONTAINER_BACKOFF_STREAK_ANNOTATION = "io.podsync.container.backoffStreak";
/** podsync's own: hash of the whole container spec, so any change restarts it (kubelet's hash covers name and image). */
export const CONTAINER_SPEC_HASH_ANNOTATION = "io.podsync.container.specHash";
/** podsync's own: the image as the spec named it. kubelet sends the runtime the image id (CreateContainer's
 * image.image is the resolved ref); containerd 1.6 then lists that id and reports the image's first tag in
 * ContainerStatus, which may be another tag of the same image. Recorded so status names the spec's image. */
export const CONTAINER_IMAGE_ANNOTATION = "io.podsync.container.image";
/** podsync's own: marks what it created (kubelet has no such label; harmless to it). */
export const MANAGED_BY = "podsync";

/** The CRI label selector for a pod's objects that podsync made (kubelet selects by uid alone). */
export const managedSelector = (uid: string): Record<string, string> => ({
  [POD_UID_LABEL]: uid,
  [KUBERNETES_MANAGED_LABEL]: MANAGED_BY,
});

/** podsync's own: the persistentVolumeClaims a container mounts (comma separated), so a claim in use by a pod
 * the runtime still holds is not removed (GET/DELETE /v1/node/volumes). */
export const CONTAINER_CLAIMS_ANNOTATION = "io.podsync.container.claims";

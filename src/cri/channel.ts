// What every grpc-js channel to a runtime shares: how an endpoint is written, and the channel options.
// Used by the CRI transport and by cri-proxy's upstream connection.

/** `unix:///run/x.sock`, `/run/x.sock`, `host:port` or `tcp://host:port` → grpc-js's target form. */
export function normaliseEndpoint(endpoint: string): string {
  if (endpoint.startsWith("unix://")) return endpoint.startsWith("unix:///") ? endpoint : `unix://${endpoint.slice(7)}`;
  if (endpoint.startsWith("/")) return `unix://${endpoint}`;
  return endpoint.replace(/^(tcp|grpc|dns):\/\//, "");
}

export function channelOptionsFor(maxMessageBytes: number): Record<string, number> {
  return {
    "grpc.max_receive_message_length": maxMessageBytes,
    "grpc.max_send_message_length": maxMessageBytes,
    // Fail fast when the runtime is down instead of queueing calls until their deadline.
    "grpc.enable_retries": 0,
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    // A client owns its connection: grpc-js otherwise shares subchannels between clients of one target, and a
    // fresh client (after the runtime restarted) would inherit another's reconnect back-off and fail fast.
    "grpc.use_local_subchannel_pool": 1,
  };
}

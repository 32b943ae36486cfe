// Where container log files are read from. On Node they are the node's own files; on Workers they are read
// through the node's cri-proxy. The reader needs only random access and a way to notice rotation.

export interface LogHandle {
  /** Identity of the open file (device:inode on Node); rotation puts a file of another identity at the path. */
  readonly id: string;
  size(): Promise<number>;
  /** Up to `length` bytes from `offset` (fewer at the end of the file). */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** The identity of the file now at the handle's path: differs after rotation, undefined when it is gone. */
  pathId(): Promise<string | undefined>;
  close(): Promise<void>;
}

export interface LogFiles {
  /** undefined when there is no file at `path`. */
  open(path: string): Promise<LogHandle | undefined>;
}

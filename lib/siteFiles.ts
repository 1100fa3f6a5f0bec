/**
 * What the domain reads of a site's files (keys, certificates, tokens named in its configuration),
 * as a port: lib/ does no I/O of its own, so whoever wires a daemon passes the file system's
 * implementation (`streams/siteFiles.ts`), and a spec may pass a map.
 */
export interface SiteFiles {
  /**
   * The file's bytes. Throws when it cannot be read, with Node's message and `code` (`ENOENT`,
   * `EISDIR`, `EACCES`, ...) where there is one.
   */
  read(path: string): Buffer;
  /**
   * Whether `path` names something that exists: false only when looking it up says it is absent
   * (or the name is too long to be a path), so an unreadable file still exists.
   */
  exists(path: string): boolean;
}

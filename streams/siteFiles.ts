import { readFileSync, statSync } from 'node:fs';
import { SiteFiles } from '../lib/siteFiles';

/** The site's files on this machine's file system: read afresh on every call, so a rotated key is picked up. */
export const nodeSiteFiles: SiteFiles = {
  read: (path) => readFileSync(path),
  exists: (path) => {
    try {
      statSync(path);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code !== 'ENOENT' && code !== 'ENAMETOOLONG' && code !== 'ENOTDIR';
    }
  },
};

/**
 * The files the CLI reads at run time that the single executable carries as assets
 * (sea-config.json), each by its path in the repository, which is also the path it is written to
 * under the directory scripts/package/entry.ts extracts them to.
 */
export const ASSETS = ['examples/helpers/minimal-helper.mjs', 'examples/helpers/persistent-helper.mjs', 'scripts/lxd/build-image.sh'];

/** The CLI's bundle, an asset of the binary that its main script (scripts/package/seaMain.ts) runs. */
export const CLI_BUNDLE_ASSET = 'rxfleet.bundle.cjs';
/** The bundle of the operator's reads alone (bin/readProgram.ts), which the main script runs for `status` and `history`. */
export const READ_BUNDLE_ASSET = 'rxfleet-read.bundle.cjs';

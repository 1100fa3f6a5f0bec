/**
 * Reading the profiles `node --cpu-prof` and `node --heap-prof` write, for the benchmark's output:
 * where the daemon's CPU time went (self time by function and by file) and what its sampled heap
 * held at exit (self size by allocation site).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuNode {
  callFrame: CallFrame;
  hitCount?: number;
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const ROOT = join(__dirname, '..');

/** `function (file:line)`, with the project's files relative to its root and node_modules shortened. */
function where(frame: CallFrame): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const file =
    url === ''
      ? ''
      : url.includes('node_modules/')
        ? url.slice(url.lastIndexOf('node_modules/') + 'node_modules/'.length)
        : url.startsWith(ROOT)
          ? relative(ROOT, url)
          : url;
  return `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${file === '' ? '' : ` ${file}:${frame.lineNumber + 1}`}`;
}

function file(frame: CallFrame): string {
  const url = frame.url.replace(/^file:\/\//, '');
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.includes('node_modules/'))
    return url
      .slice(url.lastIndexOf('node_modules/') + 'node_modules/'.length)
      .split('/')
      .slice(0, 2)
      .join('/');
  if (url.startsWith('node:')) return 'node internals';
  return url.startsWith(ROOT) ? relative(ROOT, url) : url;
}

function top(totals: Map<string, number>, total: number, count: number): Array<{ what: string; percent: number }> {
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([what, value]) => ({ what, percent: Math.round((value / total) * 1000) / 10 }));
}

/** The profile files of one kind (`.cpuprofile`, `.heapprofile`) in `dir`. */
export function profiles(dir: string, extension: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(extension))
    .map((f) => join(dir, f));
}

/** Self time of a `.cpuprofile`: the top functions and the top files (or packages), as percentages of all samples. */
export function summariseCpuProfile(
  path: string,
  count = 15,
): { samples: number; functions: Array<{ what: string; percent: number }>; files: Array<{ what: string; percent: number }> } {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as { nodes: CpuNode[] };
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    total += hits;
    byFunction.set(where(node.callFrame), (byFunction.get(where(node.callFrame)) ?? 0) + hits);
    byFile.set(file(node.callFrame), (byFile.get(file(node.callFrame)) ?? 0) + hits);
  }
  return { samples: total, functions: top(byFunction, total, count), files: top(byFile, total, count) };
}

/** Self size of a `.heapprofile` (what the sampled heap held when it was written): the top allocation sites. */
export function summariseHeapProfile(
  path: string,
  count = 15,
): { sampledMiB: number; sites: Array<{ what: string; percent: number }>; files: Array<{ what: string; percent: number }> } {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as { head: HeapNode };
  const bySite = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode): void => {
    if (node.selfSize > 0) {
      total += node.selfSize;
      bySite.set(where(node.callFrame), (bySite.get(where(node.callFrame)) ?? 0) + node.selfSize);
      byFile.set(file(node.callFrame), (byFile.get(file(node.callFrame)) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child);
  };
  visit(profile.head);
  return { sampledMiB: Math.round((total / 1024 / 1024) * 10) / 10, sites: top(bySite, total, count), files: top(byFile, total, count) };
}

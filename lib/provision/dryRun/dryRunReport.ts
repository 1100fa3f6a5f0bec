import { CycleStep } from '../cycle/cycleError';
import { HelperDecision } from '../cycle/cycleTrace';
import { CertificateSummary } from './standIns';

/**
 * What a dry run found it would do to one node (DECISIONS P23): the helper's decision and, when it
 * would configure the node, the configuration's keys (never their values), the certificate's
 * subject and validity, the server JWT's claims; or where the cycle would stop and why.
 */
export interface DryRunReport {
  readonly type: 'node';
  readonly node: string;
  /** What the cycle would do: configure (and restart) the node, leave it for later, shut it down, upgrade it, or fail. */
  readonly would: 'configure' | 'defer' | 'shutdown' | 'upgrade' | 'fail';
  /** Where it would stop, and why (`fail`). */
  readonly error?: { readonly step: CycleStep; readonly message: string };
  /** The inventory's version, and whether it says the node can be upgraded. */
  readonly inventory?: { readonly version: string; readonly upgradable: boolean };
  readonly decision?: HelperDecision;
  /** The certificate the helper issued (pki), as it names and dates it. */
  readonly certificate?: CertificateSummary;
  /** The CA the helper sent, by subject. */
  readonly ca?: string;
  /** The server JWT's claims (ed25519 flow), signed for the stand-in key (the token itself is not shown). */
  readonly serverJwt?: Readonly<Record<string, unknown>>;
  /** `upgrade`: from which version to which. */
  readonly upgrade?: { readonly from: string; readonly to: string };
  /** What the report could not show, and what would happen that the report does not say otherwise. */
  readonly notes: readonly string[];
}

/** The run's totals: nodes found, reported, and what would happen to them. */
export interface DryRunSummary {
  readonly type: 'summary';
  readonly discovered: number;
  readonly reported: number;
  readonly would: Readonly<Record<DryRunReport['would'], number>>;
}

/** A report as lines for people. */
export function reportLines(report: DryRunReport): string[] {
  const lines: string[] = [];
  const d = report.decision;
  switch (report.would) {
    case 'configure':
      lines.push(`${report.node}: would configure ${d?.keys.length ?? 0} keys: ${(d?.keys ?? []).join(', ')}; then restart it`);
      break;
    case 'defer':
      lines.push(`${report.node}: would defer${d?.msg ? `: ${JSON.stringify(d.msg)}` : ''} (tried again at the next sighting)`);
      break;
    case 'shutdown':
      lines.push(`${report.node}: would shut the node down${d?.msg ? `: ${JSON.stringify(d.msg)}` : ''}`);
      break;
    case 'upgrade':
      lines.push(
        `${report.node}: would upgrade it from ${report.upgrade?.from} to ${report.upgrade?.to} (and configure it when it comes back)`,
      );
      break;
    case 'fail':
      lines.push(`${report.node}: would fail at ${report.error?.step}: ${report.error?.message}`);
      break;
  }
  const c = report.certificate;
  if (c !== undefined)
    lines.push(
      `  certificate: ${c.subject}${c.dnsNames.length > 0 ? ` (DNS ${c.dnsNames.join(', ')})` : ''}, issued by ${c.issuer}, valid ${c.notBefore} to ${c.notAfter} (${c.validDays} days)`,
    );
  if (report.ca !== undefined) lines.push(`  CA: ${report.ca}`);
  if (report.serverJwt !== undefined) lines.push(`  server JWT claims: ${JSON.stringify(report.serverJwt)}`);
  if (d !== undefined && d.policies.length > 0) lines.push(`  policies: ${d.policies.join(', ')}`);
  if (d?.key === true) lines.push('  a private key, sent encrypted for the node');
  for (const note of report.notes) lines.push(`  note: ${note}`);
  return lines;
}

/** The summary as one line for people. */
export function summaryLine(summary: DryRunSummary, limit?: number): string {
  const w = summary.would;
  const limited = limit !== undefined && summary.reported < summary.discovered ? ` (--limit ${limit})` : '';
  return `dry run: ${summary.discovered} node${summary.discovered === 1 ? '' : 's'} in provisioning mode, ${summary.reported} reported${limited}: ${w.configure} would be configured, ${w.defer} deferred, ${w.shutdown} shut down, ${w.upgrade} upgraded, ${w.fail} would fail; nothing was sent that changes a node`;
}

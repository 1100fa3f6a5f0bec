/**
 * The reads the owner asks for, and what each carries back to it when it lands: the event waiting
 * on it (with its place in the line, or none for an event the enricher invented), the round to
 * tell, the instance answer to land again once a network is in. What is read is `reads/`'s
 * business; who waits is the owner's.
 */
import type { ReadResult } from '@rxfleet/operators';
import { IncusNetwork, IncusProject } from '../../incus/api';
import { EnrichedEvent } from '../model/event';
import { InstanceSubject, NetworkSubject, ProjectSubject, Stamped } from '../reads/readRequests';
import type { RoundContext } from '../rounds/round';
import { LineEntry } from './lineEntry';

interface Asked {
  /**
   * When it was asked for, in the enricher's own count of events: the events of one read are
   * settled in this order, and an instance read asked for before a delete of its key is stale (E7).
   */
  readonly seq: number;
}

/** A read of one instance, for an event holding a place in the line or for an invented one with none. */
export interface InstanceRead extends InstanceSubject, Asked {
  /** The event to enrich: the one in `entry`, or an invented `instance-updated`. */
  readonly event: EnrichedEvent;
  readonly entry?: LineEntry;
}

/** Whether a network read's landing re-reads the instances on the wire. */
export type NetworkFanOut = 'always' | 'if-changed';

/** A read of one network, owned by `owner`, asked for under `project`. */
export interface NetworkRead extends NetworkSubject, Asked {
  readonly owner: string;
  readonly fanOut: NetworkFanOut;
  readonly event?: EnrichedEvent;
  readonly entry?: LineEntry;
  readonly round?: RoundContext;
  /** An instance read that found this network missing: it lands again once this read has, whatever it found. */
  readonly followUp?: InstanceResult;
}

/** A read of one project's own configuration. */
export interface ProjectRead extends ProjectSubject, Asked {
  readonly round?: RoundContext;
}

/** Any read the owner asks for. */
export type ReadRequest = InstanceRead | NetworkRead | ProjectRead;

/** How an instance read landed, for everything that waited on it. */
export type InstanceResult = ReadResult<InstanceRead, string, Stamped>;
/** How a network read landed. */
export type NetworkResult = ReadResult<NetworkRead, string, Stamped<IncusNetwork>>;
/** How a project read landed. */
export type ProjectResult = ReadResult<ProjectRead, string, Stamped<IncusProject>>;
/** How any read landed. */
export type AnyResult = ReadResult<ReadRequest, string, Stamped>;

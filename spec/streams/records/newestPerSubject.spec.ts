import { StoredMessage, newestPerSubject } from '../../../streams/records/readStream';

// A deliver-last-per-subject read goes on delivering what is written while it reads: `status` once
// showed one instance twice, its record written again mid-read. One message per subject, the newest.
const message = (subject: string, seq: number): StoredMessage => ({ subject, seq, time: seq, text: `${subject}@${seq}` });

describe('newestPerSubject', () => {
  it('keeps the newest of each subject, in the order of the newest', () => {
    const read = [message('instance.a', 3), message('node.x', 5), message('node.y', 7), message('instance.a', 9)];
    expect(newestPerSubject(read).map((m) => m.text)).toEqual(['node.x@5', 'node.y@7', 'instance.a@9']);
  });

  it('keeps the newer one whatever order they came in', () => {
    expect(newestPerSubject([message('a', 9), message('a', 4)]).map((m) => m.seq)).toEqual([9]);
  });

  it('leaves one message per subject as it is', () => {
    const read = [message('a', 1), message('b', 2), message('c', 3)];
    expect(newestPerSubject(read)).toEqual(read);
  });
});

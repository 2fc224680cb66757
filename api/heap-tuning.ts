import { setFlagsFromString } from 'node:v8';

// V8 allocates an allocation site's objects straight in the old generation once most of those
// it finds in a scavenge survived it ("pretenuring"). A server under load can reach that
// decision from a transient (a burst of reads in flight when a scavenge starts) and keeps it:
// the objects of every request then die in the old generation, each scavenge walks their
// pointers into the young one (30-50 ms pauses instead of 1-3), and the process serves 7-23 %
// less with twice the p99 for as long as it runs. Measured: 4 of 7 API processes fell into that
// state under the scale case, none of 15 with this flag (bench/RESULTS.md, "Young garbage
// pretenured"). The objects of a read die with its answer: nothing here gains from pretenuring.
export function keepRequestGarbageYoung(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

// Shared timing helper for the peer scripts: warm-up runs (at least one, and
// more until WARMUP_MS, default 2000, have passed, so V8 has optimised short
// workloads too), then RUNS (default 5, minimum 5) timed runs. Every run,
// warm-up included, is checked by `verify`; a wrong result throws and the
// script exits non-zero. Prints one JSON line:
// {"workload", "engine", "ns": <median ns per op>, "runs": [...], "warmups", "measures"}.

export async function measure({ workload, engine, measures, op, verify }) {
  const runs = Math.max(5, Number(process.env.RUNS || 5));
  const once = async () => {
    globalThis.gc?.(); // collect the previous run's garbage outside the timed region
    const t0 = process.hrtime.bigint();
    const result = await op();
    const t1 = process.hrtime.bigint();
    verify(result);
    return Number(t1 - t0);
  };
  const warmupNs = Number(process.env.WARMUP_MS ?? 2000) * 1e6;
  let warmups = 0;
  for (let spent = 0; warmups < 1 || (spent < warmupNs && warmups < 100); warmups++) spent += await once();
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const ns = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  console.log(JSON.stringify({ workload, engine, ns, runs: times, warmups, measures }));
}

export function check(cond, what) {
  if (!cond) throw new Error(`verification failed: ${what}`);
}

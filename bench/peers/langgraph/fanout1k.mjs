// fanout1k on LangGraph.js: a static fan-out + AND-join. Node "source" has an
// edge to each of 1,000 branch nodes b0..b999 (so all run in one superstep);
// the join is addEdge([b0..b999], "join"), LangGraph's waiting edge, which
// fires "join" only after every branch has finished. Each branch appends its
// result to a list channel (concat reducer); join checks it sees all 1,000.
// One op = one invoke() of the compiled graph (compiled once, outside timing).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { measure, check } from "../lib/measure.mjs";

const N = 1_000;
const State = Annotation.Root({
  results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  joined: Annotation(), // set by join: number of branch results it saw
});
const g = new StateGraph(State)
  .addNode("source", () => ({}))
  .addNode("join", (s) => ({ joined: s.results.length }));
const branches = [];
for (let i = 0; i < N; i++) {
  g.addNode(`b${i}`, () => ({ results: [i] }));
  g.addEdge("source", `b${i}`);
  branches.push(`b${i}`);
}
g.addEdge(START, "source");
g.addEdge(branches, "join");
g.addEdge("join", END);
const app = g.compile();

await measure({
  workload: "fanout1k", engine: "langgraph",
  measures: `invoke() of a compiled StateGraph: source -> ${N} static branch nodes -> join via addEdge([all branches], "join") (waiting AND-edge); branches append to a concat-reducer list, no checkpointer`,
  op: () => app.invoke({}),
  verify: (s) => {
    check(s.joined === N && s.results.length === N, `join saw ${s.joined} results (state has ${s.results.length}), want ${N}`);
    const seen = new Set(s.results);
    check(seen.size === N, `distinct results ${seen.size}, want ${N}`);
  },
});

// loopdict10k on LangGraph.js: loop10k with each node's result a small object,
// as Skein's fn steps return small dicts: draft writes drafted = {n}, its
// visit count, critique writes verdict = {ok: drafted.n >= N}, and the
// conditional edge from critique goes back to draft while verdict.ok is
// false, else END. (A channel may not have a node's name.)
// One op = one invoke() of the compiled graph (compiled once, outside timing).
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { measure, check } from "../lib/measure.mjs";

const N = 10_000;
const State = Annotation.Root({
  drafted: Annotation(),    // last-value channels
  verdict: Annotation(),
});
const app = new StateGraph(State)
  .addNode("draft", (s) => ({ drafted: { n: s.drafted.n + 1 } }))
  .addNode("critique", (s) => ({ verdict: { ok: s.drafted.n >= N } }))
  .addEdge(START, "draft")
  .addEdge("draft", "critique")
  .addConditionalEdges("critique", (s) => (s.verdict.ok ? END : "draft"), ["draft", END])
  .compile();

await measure({
  workload: "loopdict10k", engine: "langgraph",
  measures: `invoke() of a compiled 2-node StateGraph whose nodes write small objects ({n}, {ok}) and whose conditional edge loops critique -> draft ${N} times (2*${N} supersteps, recursionLimit ${2 * N + 10}, no checkpointer)`,
  op: () => app.invoke({ drafted: { n: 0 } }, { recursionLimit: 2 * N + 10 }),
  verify: (s) => check(s.drafted.n === N && s.verdict.ok === true, `drafted.n=${s.drafted.n} verdict.ok=${s.verdict.ok}, want ${N}/true`),
});

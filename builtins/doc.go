package builtins

// This file is the one table of what each builtin and its parameters do:
// `skein help`, the language server's hover and completion, and the docs
// read it from here.

import (
	"sort"
	"strings"
)

// Doc documents one builtin.
type Doc struct {
	Name       string
	Positional int    // how many leading parameters may be given by position
	Variadic   string // a *args or **kwargs parameter as written ("*steps"), or ""
	Returns    string // "Step", or "" for None
	Summary    string // one paragraph
	Params     []ParamDoc
}

// ParamDoc documents one parameter of a builtin.
type ParamDoc struct {
	Name    string
	Default string // as written in the signature; "" when required
	Doc     string
}

// Signature returns the builtin's signature as the docs write it, e.g.
// `edge(src, dst, *, when=None, on="success")`.
func (d *Doc) Signature() string {
	var parts []string
	if d.Variadic != "" {
		parts = append(parts, d.Variadic)
	}
	for i, p := range d.Params {
		if i == d.Positional && d.Variadic == "" {
			parts = append(parts, "*")
		}
		if p.Default == "" {
			parts = append(parts, p.Name)
		} else {
			parts = append(parts, p.Name+"="+p.Default)
		}
	}
	s := d.Name + "(" + strings.Join(parts, ", ") + ")"
	if d.Returns != "" {
		s += " -> " + d.Returns
	}
	return s
}

// Param returns the doc of the parameter called name, or nil.
func (d *Doc) Param(name string) *ParamDoc {
	for i := range d.Params {
		if d.Params[i].Name == name {
			return &d.Params[i]
		}
	}
	return nil
}

// DocOf returns the doc of the builtin called name, or nil.
func DocOf(name string) *Doc {
	for i := range docs {
		if docs[i].Name == name {
			return &docs[i]
		}
	}
	return nil
}

// Docs returns the docs of every builtin, sorted by name.
func Docs() []Doc {
	out := append([]Doc(nil), docs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Parameters shared by several builtins.
var (
	maxVisitsDoc = ParamDoc{"max_visits", "None", "how many times the step may be entered in one run; the next entry fails the run with max_visits_exceeded (default: the flow's max_visits, else unbounded)"}
	joinDoc      = ParamDoc{"join", `"and"`, `how a step with several forward in-edges waits: "and" runs once every in-edge has arrived and one arrived live; "or" runs on the first live arrival; "all" only when all arrived live; "done" always, once all have arrived (teardowns, reports); "first" runs on the first live arrival and cancels the other branches still under way (a race)`}
	timeoutDoc   = ParamDoc{"timeout", "None", `a duration such as "30s" or "10m" bounding one attempt (a loop or map: the whole step); on expiry the step fails with code timeout`}
)

var docs = []Doc{
	{Name: "flow", Positional: 1,
		Summary: "Describes the flow: its name, inputs, result and defaults. Optional, at most once per flow.",
		Params: []ParamDoc{
			{"name", "None", "the flow's name (default: the file name)"},
			{"description", `""`, "one line saying what the flow does"},
			{"inputs", "{}", "maps input names to default values; a default of None makes the input required. Expressions read them as inputs.NAME"},
			{"output", "None", "an expression computing the flow's result when it ends (default: the output of the last step to reach END)"},
			{"max_visits", "None", "the default visit bound of every step"},
			{"timeout", "None", `a duration such as "10m" bounding the whole run; on expiry the run fails with flow_timeout`},
			{"on_exit", "None", "an exit handler: a step no edge touches, run once after the run has ended whatever its status; it reads run.status and run.error"},
			{"max_tokens", "None", "the most model tokens the whole run may spend, child flows included; past it the run fails with budget_exceeded"},
			{"tools", "[]", "the pool of tools agent steps may be granted during a run (through request_tool), beyond the tools= each step is given"},
			{"max_grants", "2", "how many tools may be granted from the pool in one run"},
			{"concurrency", "None", "under skein serve, how many runs of the flow may run at once (per key with concurrency_key); the others wait in the queue"},
			{"concurrency_key", "None", `an input, as "inputs.repo": concurrency bounds the runs per value of it`},
			{"emit", "None", `under skein serve, a flow file (relative to this one) that the items of the run's result's "emit" list are queued for, each a dict of its inputs (the hopper)`},
			{"max_depth", "None", "required with emit: how many levels of emitted items may expand below a run queued from outside"},
			{"keep", "None", `under skein serve, how long the flow's ended runs are kept, as "7d"; older ones are deleted with their logs (default: as skein serve --keep says)`},
			{"max_cost", "None", "the most US dollars the whole run's model calls may cost (at their model(price=)), child flows included; past it the run fails with budget_exceeded"},
		}},
	{Name: "trigger",
		Summary: "Starts the flow by itself under skein serve: on a cron schedule, every period, or on a webhook delivery. Any number per flow.",
		Params: []ParamDoc{
			{"cron", "None", `a schedule in cron's five fields, as "0 3 * * *" (03:00 daily), or @hourly, @daily, @weekly`},
			{"every", "None", `a period such as "10m": fires at each multiple of it since the Unix epoch`},
			{"webhook", "None", "a name: deliveries to POST /hooks/NAME, signed with the secret, start a run"},
			{"tz", "None", `the IANA time zone a cron schedule is read in, as "Europe/Berlin" (default UTC)`},
			{"inputs", "None", "the run's inputs: a dict, or for a webhook a function of the delivery (its body as e.body, its headers as e.headers) returning one"},
			{"overlap", "None", `what a firing does while a run of the flow is queued or running: "skip" drops it (a clock trigger's default), "queue" waits for them, "replace" cancels them; a webhook's deliveries by default all run, within the flow's concurrency`},
			{"catch_up", "None", `how far back firings missed while skein serve was down are still run, as "1h" (default: none)`},
			{"secret_env", "None", "a webhook's: the environment variable that holds its HMAC-SHA256 secret"},
			{"watch", "None", "a file or directory (relative to the flow's file, inside its root): a change to it (a directory: to a file in it) fires, once changes have settled"},
			{"debounce", `"1s"`, "a watch trigger's: how long changes must settle before it fires; a burst of changes fires once"},
		}},
	{Name: "input", Positional: 1, Returns: "input",
		Summary: `Declares one flow input, as a value of flow(inputs = {...}): input("latest", help = "release tag"). Without default the input is required.`,
		Params: []ParamDoc{
			{"default", "<required>", "the value when none is given; without it the input is required"},
			{"type", "None", `"string", "int", "float", "bool", "list", "dict" or "any" (default: the type of the default, else "any"); values given on the command line are converted to it`},
			{"help", `""`, "one line shown by skein run FLOW --help and in errors about the input"},
			{"choices", "None", "the values allowed"},
			{"secret", "False", "a secret: a string with no default and no choices, masked wherever the run would show it; the checker keeps it to env=, stdin= and model keys unless a use says reveal(...)"},
		}},
	{Name: "secret", Positional: 1, Returns: "secret",
		Summary: `A secret read when the run starts (and again when it resumes), never while the flow loads, and never stored: secret("API_TOKEN") reads $API_TOKEN; secret("token", file = "keys/token") reads a file. It goes in env=, stdin= or model(api_key=); elsewhere the checker refuses it unless written reveal(secret(...)).`,
		Params: []ParamDoc{
			{"name", "", "the environment variable read, or with file= the name messages use"},
			{"file", "None", "a file to read instead, relative to this file's folder and inside the flow root"},
		}},
	{Name: "reveal", Positional: 1,
		Summary: `reveal(x) is x, marked as a deliberate use of a secret where the checker would refuse it (an argv element, a prompt, an output, a condition): reveal(secret("TOKEN")) in a flow, "{{ reveal(inputs.token) }}" in a template, reveal(r.inputs.token) in a function. The run still masks the value in what it shows.`},
	{Name: "model", Positional: 1,
		Summary: `Declares a model that llm= steps, LLM routers and judge() name with model = "name" (an OpenAI-compatible chat completions endpoint, Anthropic's Messages API, or Skein's built-in offline stub).`,
		Params: []ParamDoc{
			{"name", "", "the name steps give as model ="},
			{"model", "", "the model the endpoint serves, e.g. \"gpt-4o-mini\" (\"stub\" by default for provider = \"stub\")"},
			{"base_url", "None", "the endpoint (default: $SKEIN_BASE_URL, else $OPENAI_BASE_URL, else OpenAI's)"},
			{"api_key_env", `"OPENAI_API_KEY"`, `the environment variable holding the API key, read when a call is made ("" sends none; ANTHROPIC_API_KEY by default for the Messages API)`},
			{"temperature", "None", "the sampling temperature (not sent to reasoning models or the Messages API)"},
			{"max_tokens", "None", "the most tokens one reply may have (max_completion_tokens for reasoning models)"},
			{"provider", "None", `"openai" (chat completions), "anthropic" (the Messages API) or "stub" (answers offline, from answers=); default: "anthropic" for a base_url on api.anthropic.com, else "openai"`},
			{"reasoning_effort", "None", `how hard a reasoning model thinks: "none", "minimal", "low", "medium", "high", "xhigh" or "max"`},
			{"reasoning", "None", "True or False: whether the model is a reasoning model, overriding Skein's table of model ids"},
			{"answers", "None", `for provider = "stub": the rules it answers from, a list ([{"match": "text", "reply": "answer"}, ...]) or a JSON file of them (a path relative to the flow)`},
			{"fallbacks", "None", `the model() names asked in order when this model fails with a provider error (a transport or HTTP error, a timeout), not on a bad answer`},
			{"price", "None", `US dollars per million tokens, {"input": 2.5, "output": 10.0, "cached_input": 1.25}: the run's usage then has a cost`},
			{"rpm", "None", "requests a minute: the run tree's calls of this model are spaced to keep to it"},
			{"tpm", "None", "tokens a minute: the run tree's calls of this model wait once a minute's tokens are spent"},
			{"api_key", "None", `the API key as a secret(): api_key = secret("MY_KEY") is api_key_env = "MY_KEY"; secret("key", file = "keys/openai") reads a file when the run starts`},
		}},
	{Name: "judge", Positional: 1, Returns: "judge",
		Summary: "A loop until= written in plain English, judged by a model after each iteration: STOP ends the loop, CONTINUE runs another with the reason as it.feedback.",
		Params: []ParamDoc{
			{"condition", "", "the condition, in plain English"},
			{"model", "None", "the model() to ask (default: the default model)"},
		}},
	{Name: "step", Positional: 1, Returns: "Step",
		Summary: "Declares one step. At most one of run, shell, fn and flow says what it does; with none it is a noop (a join or marker point).",
		Params: []ParamDoc{
			{"name", "", "the step's name: [a-z_][a-z0-9_]*, unique in the flow; expressions read its output by this name"},
			{"run", "None", "a task: the argv to execute directly, no shell; output {stdout, stderr, exit_code}"},
			{"shell", "None", "a shell step: the script for /bin/sh -c; templates are not allowed in it (pass values through env)"},
			{"fn", "None", "an fn step: a Starlark function of one parameter r (the run view); its return value is the output"},
			{"flow", "None", "a subflow step: the child flow file, relative to this file; its result is the output"},
			{"args", "[]", "more argv elements appended after run="},
			{"env", "{}", "environment variables added for run= and shell= steps; values may be templates"},
			{"stdin", "None", "a template fed to the process's standard input"},
			{"dir", "None", "the working directory, relative to the flow file (default: its directory)"},
			{"inputs", "{}", "the child flow's inputs; a value that is exactly one template passes the value with its type"},
			maxVisitsDoc,
			{"retries", "0", "how many more times a failed step is tried, at most 100; retries are not visits (task, shell, fn, flow, llm and agent steps)"},
			{"backoff", `"1s"`, "the delay before the first retry, doubled after each (where retries applies)"},
			timeoutDoc,
			joinDoc,
			{"llm", "None", "an llm step: the prompt (a template) of one model call; the output is the reply's text, or the object schema describes"},
			{"system", "None", "the system message of an llm step (a template)"},
			{"model", "None", "the model() an llm step calls (default: the default model)"},
			{"schema", "None", "a JSON Schema dict the llm step's reply must satisfy; the output is then the parsed object"},
			{"max_tokens", "None", "the most tokens the llm step's reply may have"},
			{"retry_when", "None", "a condition deciding whether a failed attempt is retried; the step's own name is bound to the failed attempt (code, error, exit_code, ...); task, shell, fn and flow steps"},
			{"wait", "None", `a wait step: a duration such as "30s" (a template may compute it); it succeeds once it has passed`},
			{"approve", "None", `an approval step: the question (a template) a person answers; approved it succeeds with {approved, by, reason, at}, rejected it fails with code rejected; timeout bounds the wait from when it was first asked`},
			{"agent", "None", "an agent step: the task (a template) of a loop of model calls in which the model may call the step's tools; the output is its final answer (text, or the object schema describes)"},
			{"tools", "[]", "the tools (tool() values or names) an agent step's model may call"},
			{"max_turns", "8", "the most model calls of one agent step visit; a model still calling tools after them fails the step with max_turns"},
			{"backoff_factor", "2.0", "how much longer each retry's delay is than the one before (1.0: a constant interval); run=, shell=, fn= and flow= steps"},
			{"max_backoff", `"1h"`, "the longest delay between retries"},
			{"jitter", "False", "each retry's delay is drawn from [d/2, d], the same for a replayed run"},
			{"wait_until", "None", `a wait step that waits until a time in RFC 3339, such as "2026-12-24T09:00:00Z" (a template may compute it); a time past does not wait`},
			{"partial", "False", "an llm or agent step takes a reply cut at the token limit as its output instead of failing with model_truncated"},
			{"fields", "{}", `an approval step's fields: names to input() declarations (or defaults), values the person gives with the decision (skein approve --set NAME=VALUE); approved, the output has them as values: gate.values.version`},
		}},
	{Name: "tool", Positional: 1, Returns: "tool",
		Summary: `Declares a tool an agent step may call: a run= argv (or shell= script, fn= function, flow= child flow) whose templates read the model's arguments as args.NAME, each argument one whole argv element.`,
		Params: []ParamDoc{
			{"name", "", "the function name the model calls: [a-z_][a-z0-9_]*, unique in the flow"},
			{"run", "None", `the argv to execute, no shell; args.NAME in a template is the argument's value: run = ["cat", "{{ args.path }}"]`},
			{"shell", "None", "a script for /bin/sh -c, run verbatim (no templates); the arguments reach it as environment variables ARG_NAME"},
			{"params", "{}", `maps parameter names to JSON-schema types ("string", "integer", "number", "boolean", "array", "object"); a call whose arguments do not match is refused and the model told why`},
			{"help", `""`, "the description the model sees"},
			{"fn", "None", "a Starlark function of one parameter args (the validated arguments: args.path); its result (text, or data sent as JSON) goes back to the model, and an error it raises is the tool's failure"},
			{"flow", "None", "a literal path (relative to this file) of a child flow run once per call, the validated arguments as its inputs (each param a declared input of the child); its output goes back to the model, its failure is the tool's"},
			{"final", "False", "a call of it that succeeds ends the agent step: its result (a fn's value, a child flow's output, a process's stdout) is the answer, the model not called again"},
			{"approve", "None", `a question (a template reading args.NAME) a person answers before each call runs: the agent's turn waits for the decision like an approval step; a rejection goes back to the model as the tool's result`},
			{"env", "{}", `extra environment variables of a run= or shell= tool's process, templates or secret()s: env = {"TOKEN": secret("TOKEN")}`},
		}},
	{Name: "edge", Positional: 2,
		Summary: "Connects the end of src to the start of dst. src may be START; dst may be END or ABORT.",
		Params: []ParamDoc{
			{"src", "", "the step the edge leaves (or START)"},
			{"dst", "", "the step the edge enters (or END, ABORT)"},
			{"when", "None", "a condition: the edge fires only when it is True"},
			{"on", `"success"`, `which outcome of src the edge follows: "success", "failure" or "always"`},
		}},
	{Name: "chain", Variadic: "*steps",
		Summary: "Adds an unconditional success edge between each consecutive pair of steps; the list may begin with START and end with END."},
	{Name: "router", Positional: 1, Returns: "Step",
		Summary: "A step that takes exactly one branch and prunes the others: by= with routes=, or cases=, with an optional default=.",
		Params: []ParamDoc{
			{"name", "", "the router's name"},
			{"by", "None", "an expression returning a label of routes"},
			{"routes", "None", "maps labels (strings) to target steps"},
			{"cases", "None", "an ordered list of (condition, target) pairs; the first whose condition is True wins"},
			{"default", "None", "the target when nothing matches (without one, no match fails the run with no_route)"},
			maxVisitsDoc,
			joinDoc,
			{"llm", "None", "an LLM router: the prompt of one model call that picks one of the labels of routes"},
			{"model", "None", "the model() an LLM router calls"},
		}},
	{Name: "loop", Positional: 1, Returns: "Step",
		Summary: "Runs its body repeatedly until until() says stop or max_iterations is reached.",
		Params: []ParamDoc{
			{"name", "", "the loop's name"},
			{"body", "", "the list of steps run each iteration, as a chain in list order unless edges among them say otherwise"},
			{"until", "", "a function of one argument it (index, iteration, output, result, history, feedback, is_last, inputs), or its name; returns True to stop, False, or (stop, reason)"},
			{"max_iterations", "", "the most iterations (>= 1)"},
			maxVisitsDoc,
			joinDoc,
			timeoutDoc,
			{"exhausted", `"succeed"`, `what reaching max_iterations without until saying stop is: "succeed", or "fail" (code exhausted, which on = "failure" edges can route)`},
		}},
	{Name: "map", Positional: 1, Returns: "Step",
		Summary: "Runs its body once per element of a list; the output is the list of the body's last-step outputs, in input order.",
		Params: []ParamDoc{
			{"name", "", "the map's name"},
			{"over", "", "an expression yielding the list"},
			{"body", "", "the list of steps run for each element"},
			{"concurrency", "4", "how many elements run at a time"},
			{"item_var", `"item"`, "the name the body's expressions read the element by (its position is index)"},
			maxVisitsDoc,
			joinDoc,
			timeoutDoc,
			{"empty", `"run"`, `over an empty list: "run" succeeds with [] and goes on; "skip" skips the map and what only it leads to`},
			{"max_items", "None", "the most elements over= may give; more fail the map with map_too_many_items (and the envelope counts this many, docs/envelope.md)"},
		}},
	{Name: "struct", Variadic: "**fields", Returns: "struct",
		Summary: "A struct value with the given fields, read as s.field; fn steps may return one."},
	{Name: "range", Variadic: "*args",
		Summary: "Starlark's range([start,] stop[, step]), limited to 10,000,000 elements."},
	{Name: "str", Variadic: "x", Returns: "string",
		Summary: "Starlark's str(x); a value nested more than 1,000 deep is an error rather than minutes of work."},
	{Name: "repr", Variadic: "x", Returns: "string",
		Summary: "Starlark's repr(x); a value nested more than 1,000 deep is an error rather than minutes of work."},
	{Name: "print", Variadic: "*args", Returns: "None",
		Summary: "Starlark's print(*args, sep=\" \"): fn steps' lines go to the step's log; values nested more than 1,000 deep are an error."},
}

// builtinParams are the parameter lists the builtins unpack, by name, for
// the test that keeps the table true.
var builtinParams = map[string][]string{
	"flow": flowParams, "step": stepParams, "edge": edgeParams,
	"router": routerParams, "loop": loopParams, "map": mapParams,
	"input": inputParams, "model": modelParams, "judge": judgeParams,
	"tool": toolParams, "trigger": triggerParams, "secret": secretParams,
}

// A minimal OpenAI-compatible chat completions server on node-llama-cpp
// (llama.cpp's CPU build), for Skein's opt-in real-engine test: it serves
// POST /v1/chat/completions, turning response_format json_schema into a
// llama.cpp grammar so the answer is constrained to the schema. One request
// at a time, one thread. It proves the wire format and constrained
// decoding against a real engine, not answer quality.
//
// usage: node server.mjs MODEL.gguf PORTFILE
import http from "node:http";
import fs from "node:fs";
import {getLlama, LlamaCompletion, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, portFile] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 2048, threads: 1});
const sequence = context.getSequence();

let queue = Promise.resolve();
function serialized(fn) {
    const p = queue.then(fn, fn);
    queue = p.catch(() => {});
    return p;
}

function prompt(messages) {
    return messages.map((m) => `${m.role}: ${m.content}\n`).join("") + "assistant: ";
}

async function complete(body) {
    const text = prompt(body.messages ?? []);
    const options = {maxTokens: Math.min(body.max_tokens ?? 48, 256), temperature: 0.8, seed: 1};
    const rf = body.response_format;
    if (rf?.type === "json_schema" && rf.json_schema?.schema)
        options.grammar = await llama.createGrammarForJsonSchema(rf.json_schema.schema);
    await sequence.clearHistory();
    const completion = new LlamaCompletion({contextSequence: sequence});
    const out = await completion.generateCompletion(text, options);
    return {
        id: "chatcmpl-engine",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{index: 0, message: {role: "assistant", content: out}, finish_reason: "stop"}],
        usage: {
            prompt_tokens: model.tokenize(text).length,
            completion_tokens: model.tokenize(out).length,
            total_tokens: model.tokenize(text).length + model.tokenize(out).length
        }
    };
}

const server = http.createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, {"content-type": "application/json"});
        res.end(JSON.stringify({error: {message: `no route ${req.method} ${req.url}`}}));
        return;
    }
    let raw = "";
    req.on("data", (c) => { raw += c; });
    req.on("end", () => {
        serialized(async () => {
            try {
                const reply = await complete(JSON.parse(raw));
                res.writeHead(200, {"content-type": "application/json"});
                res.end(JSON.stringify(reply));
            } catch (err) {
                res.writeHead(500, {"content-type": "application/json"});
                res.end(JSON.stringify({error: {message: String(err?.message ?? err)}}));
            }
        });
    });
});
server.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(portFile, String(server.address().port));
});

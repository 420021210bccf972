"""Writes a tiny llama-architecture GGUF with random weights.

It has no knowledge at all: it exists so that a real inference engine
(llama.cpp's llama-server) can load it and generate, which proves Skein's
wire format, constrained decoding and tool calls against a real engine,
never answer quality. Its chat template (CHAT_TEMPLATE, Qwen 2.5's shape)
lists tools and renders tool calls and results in the <tool_call> JSON form
that llama-server's --jinja parser recognizes. Needs numpy and llama.cpp's
gguf-py on PYTHONPATH.

usage: python3 make_gguf.py OUT.gguf
"""

import sys

import numpy as np
import gguf

N_EMBD, N_HEAD, N_LAYER, N_FF, N_CTX = 64, 4, 2, 128, 4096
TOOL_TOKENS = ["<tool_call>", "</tool_call>"]

# Qwen 2.5's template (models/templates/Qwen-Qwen2.5-7B-Instruct.jinja in
# llama.cpp) with a neutral default system message: tools listed as JSON in
# the system message, tool calls as <tool_call>{"name", "arguments"}</tool_call>,
# tool results as <tool_response> in a user turn.
CHAT_TEMPLATE = """\
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


def vocab():
    tokens = [b"<unk>", b"<s>", b"</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    # Byte fallback tokens, so any text can be tokenized.
    for b in range(256):
        tokens.append(("<0x%02X>" % b).encode())
        types.append(gguf.TokenType.BYTE)
    # One token per printable ASCII character ("\u2581" is SentencePiece's space).
    for c in range(32, 127):
        tokens.append(("\u2581" if c == 32 else chr(c)).encode())
        types.append(gguf.TokenType.NORMAL)
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(len(tokens) - 259)]
    # The tool call markers are single tokens, as in Qwen 2.5, so that a
    # request's logit_bias can ask for a call at once.
    for t in TOOL_TOKENS:
        tokens.append(t.encode())
        types.append(gguf.TokenType.USER_DEFINED)
        scores.append(0.0)
    return tokens, scores, types


def main(out):
    rng = np.random.default_rng(7)
    tokens, scores, types = vocab()
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("skein-random-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    # No space before text after a special token ("<tool_call>\n", not
    # "<tool_call> \n"), as the template writes it.
    w.add_add_space_prefix(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def rand(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def t(name, *shape):
        w.add_tensor(name, rand(*shape))

    def ones(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    n_vocab = len(tokens)
    # The model is random, but where a request leaves it free it behaves
    # predictably. Every embedding has 1 in dimension 0, which the small
    # random layers leave dominant, so the last token alone decides the
    # output layer's large logits (a bigram model on top of the noise):
    # -10 there keeps a token down (logits near -80) whatever came before,
    # and +30 in the dimension a token's embedding marks raises another
    # after it. So:
    # - free text is printable ASCII without "}" and never ends by itself:
    #   it runs to max_tokens (a byte token could start invalid UTF-8,
    #   which llama-server's reply parser refuses);
    # - a grammar that allows nothing else still gets what is kept down
    #   (EOS at its end, "}" in JSON: the "}" token, which is kept down
    #   less than its byte token), so constrained replies end where their
    #   grammar does;
    # - the model never calls a tool unasked; a request whose logit_bias
    #   raises "<tool_call>" gets exactly one call: after "<tool_call>"
    #   comes a newline, after the arguments' last "}" comes
    #   "</tool_call>", and after that EOS.
    ids = {t: i for i, t in enumerate(tokens)}
    nl, brace = ids[b"<0x0A>"], ids[b"}"]
    call, end_call = ids[TOOL_TOKENS[0].encode()], ids[TOOL_TOKENS[1].encode()]
    marks = {call: 1, brace: 2, end_call: 3}  # token -> the dimension it marks
    embd = rand(n_vocab, N_EMBD)
    embd[:, :4] = 0.0
    embd[:, 0] = 1.0
    for tok, dim in marks.items():
        embd[tok, dim] = 1.0
    w.add_tensor("token_embd.weight", embd)
    for i in range(N_LAYER):
        ones("blk.%d.attn_norm.weight" % i, N_EMBD)
        t("blk.%d.attn_q.weight" % i, N_EMBD, N_EMBD)
        t("blk.%d.attn_k.weight" % i, N_EMBD, N_EMBD)
        t("blk.%d.attn_v.weight" % i, N_EMBD, N_EMBD)
        t("blk.%d.attn_output.weight" % i, N_EMBD, N_EMBD)
        ones("blk.%d.ffn_norm.weight" % i, N_EMBD)
        t("blk.%d.ffn_gate.weight" % i, N_FF, N_EMBD)
        t("blk.%d.ffn_up.weight" % i, N_FF, N_EMBD)
        t("blk.%d.ffn_down.weight" % i, N_EMBD, N_FF)
    ones("output_norm.weight", N_EMBD)
    out = rand(n_vocab, N_EMBD)
    out[:, :4] = 0.0
    out[2:259, 0] = -10.0  # EOS and the 256 byte tokens
    out[[call, end_call], 0] = -10.0
    out[brace, 0] = -5.0  # down, but above its byte token: a "}" the grammar asks for is this one
    out[nl, marks[call]] = 30.0  # "<tool_call>" -> "\n"
    out[end_call, marks[brace]] = 30.0  # "}" -> "</tool_call>"
    out[2, marks[end_call]] = 30.0  # "</tool_call>" -> EOS
    w.add_tensor("output.weight", out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])

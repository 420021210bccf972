"""Writes a tiny llama-architecture GGUF with random weights.

It has no knowledge at all: it exists so that a real inference engine
(llama.cpp, through node-llama-cpp) can load it and generate, which proves
Skein's wire format and JSON-schema-constrained decoding against a real
engine, never answer quality. Needs numpy and llama.cpp's gguf-py on
PYTHONPATH.

usage: python3 make_gguf.py OUT.gguf
"""

import sys

import numpy as np
import gguf

N_EMBD, N_HEAD, N_LAYER, N_FF, N_CTX = 64, 4, 2, 128, 2048


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

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    def ones(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    n_vocab = len(tokens)
    t("token_embd.weight", n_vocab, N_EMBD)
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
    t("output.weight", n_vocab, N_EMBD)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1])

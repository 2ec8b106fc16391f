#!/usr/bin/python3
"""Independent float64 reference of the Llama forward pass, for tests.

Reads an F32 GGUF of the llama, mistral, qwen2, qwen3, phi3, gemma2 or gemma3
architecture (qwen2: Q, K and V biases; qwen3 and gemma3: each head's Q and K
RMS-normalized with their own weights; phi3: Q, K and V in one matrix, gate
and up in one; gemma2/3: embedding scaled by sqrt(dim), norms of the attention
and FFN outputs, GELU (tanh form) FFN, sliding-window attention on every 2nd
(gemma2) or 5 of 6 (gemma3) layers with base-10000 RoPE on gemma3's sliding
ones, gemma2's soft caps of scores and logits; all but llama and mistral:
RoPE rotating the pairs (i, i + d/2) -- llama.cpp's NeoX style -- instead of
(2i, 2i + 1); a sliding window where the metadata sets one; llama3's
rope_freqs and phi3's LongRoPE factors, the long ones when the served context
exceeds the original one, with its attention factor) with its own minimal
parser (numpy only), runs the tokens given on the command line one at a time,
and prints, as JSON, the natural-log softmax of the logits after each token:
    llama_reference.py [--context=N] MODEL.gguf TOKEN [TOKEN ...]  ->  [[lp_0, ...], ...]
(--context: the context the model is served with; default its own).
Straightforward loops on purpose: it shares no code and no structure with the
C++ engine, so agreement between the two means something.
"""
import json
import struct
import sys

import numpy as np

SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


def read_gguf(path):
    data = open(path, 'rb').read()
    assert data[:4] == b'GGUF', 'not a GGUF file'
    n_tensors, n_kv = struct.unpack_from('<QQ', data, 8)
    off = 24

    def string(off):
        (n,) = struct.unpack_from('<Q', data, off)
        return data[off + 8:off + 8 + n].decode('utf-8', 'replace'), off + 8 + n

    def value(t, off):
        if t == 8:
            return string(off)
        if t == 9:
            et, n = struct.unpack_from('<IQ', data, off)
            off += 12
            items = []
            for _ in range(n):
                v, off = value(et, off)
                items.append(v)
            return items, off
        fmt = '<' + SCALAR[t]
        return struct.unpack_from(fmt, data, off)[0], off + struct.calcsize(fmt)

    meta = {}
    for _ in range(n_kv):
        key, off = string(off)
        (t,) = struct.unpack_from('<I', data, off)
        meta[key], off = value(t, off + 4)
    infos = {}
    for _ in range(n_tensors):
        name, off = string(off)
        (nd,) = struct.unpack_from('<I', data, off)
        dims = struct.unpack_from('<' + 'Q' * nd, data, off + 4)
        off += 4 + 8 * nd
        ttype, toff = struct.unpack_from('<IQ', data, off)
        off += 12
        infos[name] = (dims, ttype, toff)
    align = meta.get('general.alignment', 32)
    base = (off + align - 1) // align * align

    def tensor(name):
        dims, ttype, toff = infos[name]
        assert ttype == 0, name + ' is not F32'
        count = int(np.prod(dims))
        arr = np.frombuffer(data, dtype=np.float32, count=count, offset=base + toff).astype(np.float64)
        return arr.reshape(tuple(reversed(dims)))

    return meta, infos, tensor


def main():
    args = sys.argv[1:]
    served = 0  # --context=N: the context the model is served with (0: its own)
    if args and args[0].startswith('--context='):
        served = int(args[0].split('=', 1)[1])
        args = args[1:]
    path, tokens = args[0], [int(t) for t in args[1:]]
    meta, infos, w = read_gguf(path)
    arch = meta['general.architecture']
    dim = meta[arch + '.embedding_length']
    n_layers = meta[arch + '.block_count']
    n_heads = meta[arch + '.attention.head_count']
    n_kv = meta.get(arch + '.attention.head_count_kv', n_heads)
    hd = meta.get(arch + '.attention.key_length', dim // n_heads)
    gemma = arch in ('gemma2', 'gemma3')
    eps = meta.get(arch + '.attention.layer_norm_rms_epsilon', 1e-5)
    base = meta.get(arch + '.rope.freq_base', 10000.0)
    rot = meta.get(arch + '.rope.dimension_count', hd)
    inv_global = [base ** (-2.0 * i / rot) for i in range(rot // 2)]
    # Frequency factors divide the frequencies: llama3's rope_freqs, or phi3's
    # LongRoPE pair (the long factors when the served context exceeds the
    # original one), whose attention factor scales the rotated dimensions.
    ctx = meta[arch + '.context_length']
    orig = meta.get(arch + '.rope.scaling.original_context_length', ctx)
    mscale = meta.get(arch + '.rope.scaling.attn_factor', 1.0)
    factors = None
    if 'rope_freqs.weight' in infos:
        factors = w('rope_freqs.weight')
    elif 'rope_factors_long.weight' in infos:
        factors = w('rope_factors_long.weight' if (served or ctx) > orig else 'rope_factors_short.weight')
    if factors is not None:
        inv_global = [f / factors[i] for i, f in enumerate(inv_global)]
    inv_local = [10000.0 ** (-2.0 * i / rot) for i in range(rot // 2)] if arch == 'gemma3' else inv_global
    window = meta.get(arch + '.attention.sliding_window', 4096 if arch == 'gemma2' else 0)
    period = {'gemma2': 2, 'gemma3': 6}.get(arch, 1)
    attn_cap = meta.get(arch + '.attn_logit_softcapping', 50.0) if arch == 'gemma2' else 0.0
    final_cap = meta.get(arch + '.final_logit_softcapping', 30.0) if arch == 'gemma2' else 0.0

    def slides(l):
        return window > 0 and (period == 1 or l % period < period - 1)
    out_name = 'output.weight' if 'output.weight' in infos else 'token_embd.weight'

    def rmsnorm(x, g):
        return x / np.sqrt(np.mean(x * x) + eps) * g

    neox = arch in ('qwen2', 'qwen3', 'phi3', 'gemma2', 'gemma3')

    def rope(v, pos, inv):
        v = v.reshape(-1, hd).copy()
        for i in range(rot // 2):
            c, s = mscale * np.cos(pos * inv[i]), mscale * np.sin(pos * inv[i])
            j, k = (i, i + rot // 2) if neox else (2 * i, 2 * i + 1)
            a, b = v[:, j].copy(), v[:, k].copy()
            v[:, j], v[:, k] = a * c - b * s, a * s + b * c
        return v.reshape(-1)

    q_rows, kv_rows = n_heads * hd, n_kv * hd

    def project(p, name, h):
        if p + 'attn_qkv.weight' in infos:  # phi3: Q, K and V rows in one matrix
            start = {'attn_q': 0, 'attn_k': q_rows, 'attn_v': q_rows + kv_rows}[name]
            rows = q_rows if name == 'attn_q' else kv_rows
            return w(p + 'attn_qkv.weight')[start:start + rows] @ h
        y = w(p + name + '.weight') @ h
        return y + w(p + name + '.bias') if p + name + '.bias' in infos else y

    keys = [[] for _ in range(n_layers)]
    vals = [[] for _ in range(n_layers)]
    result = []
    for pos, tok in enumerate(tokens):
        x = w('token_embd.weight')[tok].copy()
        if gemma:
            x = x * np.sqrt(dim)
        for l in range(n_layers):
            inv = inv_local if slides(l) else inv_global
            first = max(0, pos + 1 - window) if slides(l) else 0
            p = 'blk.%d.' % l
            h = rmsnorm(x, w(p + 'attn_norm.weight'))
            q, k = project(p, 'attn_q', h), project(p, 'attn_k', h)
            if p + 'attn_q_norm.weight' in infos:  # qwen3: each head normalized with its own weights
                q = np.concatenate([rmsnorm(r, w(p + 'attn_q_norm.weight')) for r in q.reshape(-1, hd)])
                k = np.concatenate([rmsnorm(r, w(p + 'attn_k_norm.weight')) for r in k.reshape(-1, hd)])
            q = rope(q, pos, inv)
            keys[l].append(rope(k, pos, inv))
            vals[l].append(project(p, 'attn_v', h))
            att = np.zeros(n_heads * hd)
            for head in range(n_heads):
                kvh = head // (n_heads // n_kv)
                qh = q[head * hd:(head + 1) * hd]
                seen = range(first, pos + 1)
                scores = np.array([qh @ keys[l][j][kvh * hd:(kvh + 1) * hd] for j in seen]) / np.sqrt(hd)
                if attn_cap:
                    scores = attn_cap * np.tanh(scores / attn_cap)
                probs = np.exp(scores - scores.max())
                probs /= probs.sum()
                att[head * hd:(head + 1) * hd] = sum(pj * vals[l][j][kvh * hd:(kvh + 1) * hd]
                                                     for pj, j in zip(probs, seen))
            out = w(p + 'attn_output.weight') @ att
            if gemma:
                out = rmsnorm(out, w(p + 'post_attention_norm.weight'))
            x = x + out
            h = rmsnorm(x, w(p + 'ffn_norm.weight'))
            if p + 'ffn_gate.weight' in infos:
                g, u = w(p + 'ffn_gate.weight') @ h, w(p + 'ffn_up.weight') @ h
            else:  # phi3: gate rows, then up rows, in ffn_up
                gu = w(p + 'ffn_up.weight') @ h
                g, u = gu[:len(gu) // 2], gu[len(gu) // 2:]
            if gemma:
                act = 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))
            else:
                act = g / (1.0 + np.exp(-g))
            out = w(p + 'ffn_down.weight') @ (act * u)
            if gemma:
                out = rmsnorm(out, w(p + 'post_ffw_norm.weight'))
            x = x + out
        logits = w(out_name) @ rmsnorm(x, w('output_norm.weight'))
        if final_cap:
            logits = final_cap * np.tanh(logits / final_cap)
        shifted = logits - logits.max()
        result.append((shifted - np.log(np.exp(shifted).sum())).tolist())
    json.dump(result, sys.stdout)


if __name__ == '__main__':
    main()

"""The model zoo: well-known architectures as a PyTorch user writes them,
small enough to export, compile and train in a second each.

Each entry of ZOO is a Zoo(name, build, data, batchnorm): build() returns
the torch.nn.Module (forward(*inputs) -> scalar loss) built from the
current torch seed; data(rng, n) returns [(input name, array of n
samples)] in forward()'s order. batchnorm marks models whose losses
follow PyTorch to 1e-3 rather than 1e-4 (batch statistics in float32).
Dropout is 0 everywhere: a program's masks are not PyTorch's.

Used by tests/zoo/run.py (trained 5 steps against PyTorch in the suite)
and bench/zoo.py (speed against PyTorch eager). Run with /usr/bin/python3.
"""

import collections
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

Zoo = collections.namedtuple("Zoo", "name build data batchnorm")

VOCAB, SEQ, DIM = 40, 8, 16


def tokens(rng, n, vocab=VOCAB, seq=SEQ, low=0):
    return rng.randint(low, vocab, (n, seq)).astype(np.int64)


def labels(rng, n, classes):
    return rng.randint(0, classes, n).astype(np.int64)


def images(rng, n, c=3, hw=12):
    return rng.randn(n, c, hw, hw).astype(np.float32)


def binary(rng, n):
    return (rng.rand(n) < 0.5).astype(np.float32)


# ---- CNNs ----

class SmallCNN(nn.Module):
    """Conv-BatchNorm-ReLU-MaxPool twice, a linear head; cross-entropy."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 3 * 3, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.head(self.features(x).flatten(1)), y)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (self.down(x) if self.down is not None else x))


class ResNetish(nn.Module):
    """ResNet-18's shape in miniature: stem, residual stages, global pool."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2),
                                    BasicBlock(16, 16, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc(self.pool(self.layers(self.stem(x))).flatten(1)), y)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.block(x) if self.use_res else self.block(x)


class MobileNetish(nn.Module):
    """MobileNetV2's inverted residuals: depthwise convolutions, ReLU6."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(),
            InvertedResidual(8, 8, 1, 2), InvertedResidual(8, 12, 2, 2),
            InvertedResidual(12, 12, 1, 2))
        self.fc = nn.Linear(12, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc(self.net(x).mean((2, 3))), y)


class MLPRegression(nn.Module):
    """An MLP regressor trained with nn.MSELoss."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 3))
        self.loss = nn.MSELoss()

    def forward(self, x, y):
        return self.loss(self.net(x), y)


# ---- Transformers ----

class ViT(nn.Module):
    """A vision transformer: patch embedding, class token, learned positions,
    nn.TransformerEncoder, label-smoothed cross-entropy."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, DIM, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, DIM) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 10, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, 2, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, 10)

    def forward(self, x, y):
        p = self.patch(x).flatten(2).transpose(1, 2)  # [B, 9, DIM]
        h = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], dim=1) + self.pos
        h = self.norm(self.encoder(h))
        return F.cross_entropy(self.head(h[:, 0]), y, label_smoothing=0.1)


class BERTish(nn.Module):
    """A BERT-style encoder: token (padding_idx 0), position (a position_ids
    buffer) and segment embeddings, post-LN encoder, masked-LM head tied to
    the token embedding, cross-entropy ignoring unmasked positions."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.pos = nn.Embedding(SEQ, DIM)
        self.seg = nn.Embedding(2, DIM)
        self.register_buffer("position_ids", torch.arange(SEQ).unsqueeze(0))
        self.ln = nn.LayerNorm(DIM)
        layer = nn.TransformerEncoderLayer(DIM, 2, 32, dropout=0.0, batch_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.transform = nn.Linear(DIM, DIM)
        self.decoder = nn.Linear(DIM, VOCAB)
        self.decoder.weight = self.tok.weight

    def forward(self, ids, segments, targets):
        h = self.tok(ids) + self.pos(self.position_ids[:, :ids.shape[1]]) + self.seg(segments)
        h = self.encoder(self.ln(h))
        logits = self.decoder(F.gelu(self.transform(h)))
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)


def bert_data(rng, n):
    ids = tokens(rng, n, low=1)
    ids[:, -2:] = 0  # padding
    targets = np.where(rng.rand(n, SEQ) < 0.3, tokens(rng, n, low=1), -100).astype(np.int64)
    return [("ids", ids), ("segments", (np.arange(SEQ) >= SEQ // 2).astype(np.int64)
                                      [None].repeat(n, 0)), ("targets", targets)]


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(DIM, dim=2)
        q, k, v = (z.view(b, t, 2, c // 2).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // 2))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class GPT2Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attn = CausalSelfAttention()
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT2(nn.Module):
    """A GPT-2-style decoder: learned positions, pre-LN blocks with a causal
    mask buffer, lm_head tied to the token embedding."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)
        self.wpe = nn.Embedding(SEQ, DIM)
        self.blocks = nn.Sequential(GPT2Block(), GPT2Block())
        self.ln_f = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        h = self.ln_f(self.blocks(self.wte(idx) + self.wpe(pos)))
        return F.cross_entropy(self.lm_head(h).reshape(-1, VOCAB), targets.reshape(-1))


def lm_data(rng, n):
    t = tokens(rng, n, seq=SEQ + 1)
    return [("idx", t[:, :-1].copy()), ("targets", t[:, 1:].copy())]


class PositionalEncoding(nn.Module):
    """The nn.Transformer tutorial's sinusoidal table, a buffer."""

    def __init__(self, d, max_len=32):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, 1, d)
        pe[:, 0, 0::2] = torch.sin(pos * div)
        pe[:, 0, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):  # [T, B, d]
        return x + self.pe[:x.size(0)]


class Seq2SeqTransformer(nn.Module):
    """nn.Transformer (encoder and decoder) with the tutorial's positional
    encoding buffer and a causal target mask; sequence-first tensors."""

    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, DIM)
        self.tgt_emb = nn.Embedding(VOCAB, DIM)
        self.pe = PositionalEncoding(DIM)
        self.transformer = nn.Transformer(DIM, 2, 1, 1, 32, dropout=0.0)
        self.out = nn.Linear(DIM, VOCAB)
        self.register_buffer("tgt_mask", nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, src, tgt_in, tgt_out):
        s = self.pe(self.src_emb(src).transpose(0, 1) * math.sqrt(DIM))
        t = self.pe(self.tgt_emb(tgt_in).transpose(0, 1) * math.sqrt(DIM))
        h = self.transformer(s, t, tgt_mask=self.tgt_mask)
        return F.cross_entropy(self.out(h).reshape(-1, VOCAB), tgt_out.transpose(0, 1).reshape(-1))


def seq2seq_data(rng, n):
    src = tokens(rng, n)
    tgt = np.concatenate([np.ones((n, 1), np.int64), src[:, ::-1]], axis=1)  # reverse the source
    return [("src", src), ("tgt_in", tgt[:, :-1].copy()), ("tgt_out", tgt[:, 1:].copy())]


# ---- RNNs ----

class GRUClassifier(nn.Module):
    """Embedding, a 2-layer bidirectional-free GRU, the last state classified."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.gru = nn.GRU(DIM, DIM, num_layers=2, batch_first=True)
        self.fc = nn.Linear(DIM, 4)

    def forward(self, x, y):
        _, h = self.gru(self.emb(x))
        return F.cross_entropy(self.fc(h[-1]), y)


class RNNTagger(nn.Module):
    """nn.RNN (tanh) tagging every position."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.rnn = nn.RNN(DIM, DIM, batch_first=True)
        self.fc = nn.Linear(DIM, 5)

    def forward(self, x, y):
        out, _ = self.rnn(self.emb(x))
        return F.cross_entropy(self.fc(out).reshape(-1, 5), y.reshape(-1))


class Seq2SeqLSTM(nn.Module):
    """An LSTM encoder-decoder with teacher forcing (the encoder's final state
    starts the decoder)."""

    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, DIM)
        self.tgt_emb = nn.Embedding(VOCAB, DIM)
        self.encoder = nn.LSTM(DIM, DIM, batch_first=True)
        self.decoder = nn.LSTM(DIM, DIM, batch_first=True)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, src, tgt_in, tgt_out):
        _, state = self.encoder(self.src_emb(src))
        h, _ = self.decoder(self.tgt_emb(tgt_in), state)
        return F.cross_entropy(self.out(h).reshape(-1, VOCAB), tgt_out.reshape(-1))


class PackedLSTM(nn.Module):
    """Variable-length sequences through pack_padded_sequence: the padding
    (id 0, padding_idx) is skipped and the last state is each sequence's own."""

    def __init__(self, enforce_sorted):
        super().__init__()
        self.enforce_sorted = enforce_sorted
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.lstm = nn.LSTM(DIM, DIM, batch_first=True)
        self.fc = nn.Linear(DIM, 3)

    def forward(self, x, lengths, y):
        packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                      enforce_sorted=self.enforce_sorted)
        _, (h, _) = self.lstm(packed)
        return F.cross_entropy(self.fc(h[-1]), y)


class PackedBiGRU(nn.Module):
    """A bidirectional GRU tagger over unsorted packed sequences: every
    position's output (pad_packed_sequence: zeros past each end) and both
    directions' final states feed the loss."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.gru = nn.GRU(DIM, DIM, batch_first=True, bidirectional=True)
        self.tag = nn.Linear(2 * DIM, 3)
        self.fc = nn.Linear(2 * DIM, 3)

    def forward(self, x, lengths, y):
        packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, h = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=SEQ)
        tags = self.tag(out).sum(1)
        return F.cross_entropy(self.fc(torch.cat([h[0], h[1]], 1)) + tags, y)


def packed_data(sorted_batches):
    def data(rng, n):
        lengths = rng.randint(2, SEQ + 1, n).astype(np.int64)
        if sorted_batches:  # descending overall: so within a batch of any size
            lengths = np.sort(lengths)[::-1]
        x = tokens(rng, n, low=1)
        x[np.arange(SEQ)[None, :] >= lengths[:, None]] = 0
        return [("x", x), ("lengths", lengths.copy()), ("y", labels(rng, n, 3))]
    return data


# ---- recommenders ----

class NCF(nn.Module):
    """Neural collaborative filtering: GMF and MLP towers, sigmoid, nn.BCELoss."""

    def __init__(self):
        super().__init__()
        self.user_gmf, self.item_gmf = nn.Embedding(30, 8), nn.Embedding(50, 8)
        self.user_mlp, self.item_mlp = nn.Embedding(30, 8), nn.Embedding(50, 8)
        self.mlp = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.out = nn.Linear(16, 1)
        self.loss = nn.BCELoss()

    def forward(self, user, item, label):
        gmf = self.user_gmf(user) * self.item_gmf(item)
        mlp = self.mlp(torch.cat([self.user_mlp(user), self.item_mlp(item)], 1))
        p = torch.sigmoid(self.out(torch.cat([gmf, mlp], 1))).squeeze(1)
        return self.loss(p, label)


def user_item_data(rng, n):
    return [("user", rng.randint(0, 30, n).astype(np.int64)),
            ("item", rng.randint(0, 50, n).astype(np.int64)), ("label", binary(rng, n))]


FIELDS = (20, 15, 10, 25)


def field_ids(rng, n):
    return np.stack([rng.randint(0, k, n) for k in FIELDS], 1).astype(np.int64)


class DeepFM(nn.Module):
    """DeepFM: first-order weights and factor embeddings over four fields
    (one shared table, per-field offsets), the FM pairwise term, a deep MLP;
    binary_cross_entropy_with_logits."""

    def __init__(self):
        super().__init__()
        total = sum(FIELDS)
        self.register_buffer("offsets", torch.tensor(np.cumsum((0,) + FIELDS[:-1])))
        self.first = nn.Embedding(total, 1)
        self.factors = nn.Embedding(total, 8)
        self.deep = nn.Sequential(nn.Linear(8 * len(FIELDS), 16), nn.ReLU(), nn.Linear(16, 1))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, fields, label):
        ids = fields + self.offsets
        e = self.factors(ids)  # [B, F, 8]
        fm = 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1)
        logit = self.bias + self.first(ids).sum((1, 2)) + fm + self.deep(e.flatten(1)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logit, label)


def fields_data(rng, n):
    return [("fields", field_ids(rng, n)), ("label", binary(rng, n))]


class WideDeep(nn.Module):
    """Wide & Deep: a wide linear part over the sparse ids (an EmbeddingBag
    sum of 1-wide rows) and a deep MLP over embeddings and dense features;
    sigmoid and nn.BCELoss."""

    def __init__(self):
        super().__init__()
        self.wide = nn.EmbeddingBag(sum(FIELDS), 1, mode="sum")
        self.register_buffer("offsets", torch.tensor(np.cumsum((0,) + FIELDS[:-1])))
        self.embs = nn.ModuleList(nn.Embedding(k, 6) for k in FIELDS)
        self.deep = nn.Sequential(nn.Linear(6 * len(FIELDS) + 3, 16), nn.ReLU(),
                                  nn.Linear(16, 1))

    def forward(self, fields, dense, label):
        wide = self.wide(fields + self.offsets)  # 2-D bags, one per sample
        deep = torch.cat([e(fields[:, i]) for i, e in enumerate(self.embs)] + [dense], 1)
        return F.binary_cross_entropy(torch.sigmoid(wide + self.deep(deep)).squeeze(1), label)


def wide_deep_data(rng, n):
    return [("fields", field_ids(rng, n)), ("dense", rng.randn(n, 3).astype(np.float32)),
            ("label", binary(rng, n))]


class DLRM(nn.Module):
    """DLRM: a bottom MLP, nn.EmbeddingBag tables in the forms torch exports
    (flat ids with offsets, include_last_offset, per_sample_weights; 2-D bags
    in mean and max mode) and with padding_idx (2-D bags padded with id 0,
    through python/parallax's symbolic), pairwise dot interactions, a top
    MLP."""

    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.t_sum = nn.EmbeddingBag(30, 8, mode="sum")
        self.t_last = nn.EmbeddingBag(20, 8, mode="sum", include_last_offset=True)
        self.t_weighted = nn.EmbeddingBag(25, 8, mode="sum")
        self.t_mean = nn.EmbeddingBag(15, 8, mode="mean")
        self.t_max = nn.EmbeddingBag(10, 8, mode="max")
        self.t_pad = nn.EmbeddingBag(12, 8, mode="mean", padding_idx=0)
        self.top = nn.Sequential(nn.Linear(8 + 21, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, ids_a, ids_b, ids_c, weights_c, ids_d, ids_e, ids_f, label):
        b = dense.shape[0]
        x = self.bottom(dense)
        off_a = torch.arange(0, b * ids_a.shape[1], ids_a.shape[1])
        off_b = torch.arange(0, b * ids_b.shape[1] + 1, ids_b.shape[1])
        off_c = torch.arange(0, b * ids_c.shape[1], ids_c.shape[1])
        bags = [self.t_sum(ids_a.reshape(-1), off_a), self.t_last(ids_b.reshape(-1), off_b),
                self.t_weighted(ids_c.reshape(-1), off_c, per_sample_weights=weights_c.reshape(-1)),
                self.t_mean(ids_d), self.t_max(ids_e), self.t_pad(ids_f)]
        f = torch.stack([x] + bags, dim=1)  # [B, 7, 8]
        dots = torch.bmm(f, f.transpose(1, 2))
        iu = torch.triu_indices(7, 7, 1)
        logit = self.top(torch.cat([x, dots[:, iu[0], iu[1]]], 1)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logit, label)


def dlrm_data(rng, n):
    return [("dense", rng.randn(n, 4).astype(np.float32)),
            ("ids_a", rng.randint(0, 30, (n, 3)).astype(np.int64)),
            ("ids_b", rng.randint(0, 20, (n, 2)).astype(np.int64)),
            ("ids_c", rng.randint(0, 25, (n, 3)).astype(np.int64)),
            ("weights_c", rng.rand(n, 3).astype(np.float32)),
            ("ids_d", rng.randint(0, 15, (n, 4)).astype(np.int64)),
            ("ids_e", rng.randint(0, 10, (n, 2)).astype(np.int64)),
            ("ids_f", np.where(rng.rand(n, 4) < 0.3, 0, rng.randint(1, 12, (n, 4))).astype(np.int64)),
            ("label", binary(rng, n))]


class SASRec(nn.Module):
    """SASRec: item embedding (padding_idx 0) with learned positions, causal
    self-attention blocks, scores against the next item and a sampled
    negative through the same table; BCE with logits."""

    def __init__(self):
        super().__init__()
        self.item = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.pos = nn.Embedding(SEQ, DIM)
        layer = nn.TransformerEncoderLayer(DIM, 2, DIM, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 1)
        self.register_buffer("causal", torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1))
        self.ln = nn.LayerNorm(DIM)

    def forward(self, seq, pos, neg):
        h = self.item(seq) + self.pos.weight[:seq.shape[1]]
        h = self.ln(self.blocks(h, mask=self.causal))
        pl = (h * self.item(pos)).sum(-1)
        nl = (h * self.item(neg)).sum(-1)
        keep = (pos != 0).float()
        loss = F.binary_cross_entropy_with_logits(pl, torch.ones_like(pl), reduction="none") + \
            F.binary_cross_entropy_with_logits(nl, torch.zeros_like(nl), reduction="none")
        return (loss * keep).sum() / keep.sum()


def sasrec_data(rng, n):
    s = tokens(rng, n, seq=SEQ + 1, low=1)
    s[:, :2] = 0  # left padding
    return [("seq", s[:, :-1].copy()), ("pos", s[:, 1:].copy()), ("neg", tokens(rng, n, low=1))]


class TwoTower(nn.Module):
    """A two-tower retrieval model: user and item towers, in-batch softmax
    over the dot products."""

    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(30, DIM)
        self.item = nn.Embedding(50, DIM)
        self.user_tower = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))
        self.item_tower = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, user, item):
        u = F.normalize(self.user_tower(self.user(user)), dim=1)
        v = F.normalize(self.item_tower(self.item(item)), dim=1)
        logits = u @ v.t() * 5.0
        return F.cross_entropy(logits, torch.arange(user.shape[0]))


def two_tower_data(rng, n):
    return [("user", rng.randint(0, 30, n).astype(np.int64)),
            ("item", rng.randint(0, 50, n).astype(np.int64))]


class Word2Vec(nn.Module):
    """Skip-gram with negative sampling: input and output embeddings,
    log-sigmoid of the true and the negative dot products."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Embedding(VOCAB, DIM)
        self.out = nn.Embedding(VOCAB, DIM)

    def forward(self, center, context, negatives):
        c = self.inp(center)  # [B, D]
        pos = (c * self.out(context)).sum(1)
        neg = torch.bmm(self.out(negatives), c.unsqueeze(2)).squeeze(2)  # [B, K]
        return -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(1)).mean()


def word2vec_data(rng, n):
    return [("center", rng.randint(0, VOCAB, n).astype(np.int64)),
            ("context", rng.randint(0, VOCAB, n).astype(np.int64)),
            ("negatives", rng.randint(0, VOCAB, (n, 4)).astype(np.int64))]


class FastText(nn.Module):
    """fastText: the mean of word and bigram embeddings (nn.EmbeddingBag, flat
    ids with offsets), a linear classifier."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB + 60, DIM, mode="mean")
        self.fc = nn.Linear(DIM, 4)

    def forward(self, words, y):
        b, t = words.shape
        bigrams = VOCAB + (words[:, :-1] * 7 + words[:, 1:]) % 60
        ids = torch.cat([words, bigrams], 1)
        offsets = torch.arange(0, b * ids.shape[1], ids.shape[1])
        return F.cross_entropy(self.fc(self.bag(ids.reshape(-1), offsets)), y)


def text_data(classes):
    def data(rng, n):
        return [("x", tokens(rng, n)), ("y", labels(rng, n, classes))]
    return data


class InstanceNormNet(nn.Module):
    """Style-transfer-like convolutions with nn.InstanceNorm2d (affine)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True),
                                 nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                                 nn.InstanceNorm2d(8, affine=True), nn.ReLU())
        self.fc = nn.Linear(8, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc(self.net(x).mean((2, 3))), y)


class FlipNet(nn.Module):
    """A bidirectional feature made by torch.flip (Slice with step -1)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.fwd = nn.Linear(DIM, DIM)
        self.bwd = nn.Linear(DIM, DIM)
        self.fc = nn.Linear(DIM, 3)

    def forward(self, x, y):
        e = self.emb(x)
        h = torch.tanh(self.fwd(e).cumsum(1) + torch.flip(self.bwd(torch.flip(e, [1])).cumsum(1),
                                                          [1]))
        return F.cross_entropy(self.fc(h.mean(1)), y)


def image_data(classes=10):
    def data(rng, n):
        return [("x", images(rng, n)), ("y", labels(rng, n, classes))]
    return data


def regression_data(rng, n):
    x = rng.randn(n, 10).astype(np.float32)
    return [("x", x), ("y", np.tanh(x[:, :3] * 2).astype(np.float32))]


ZOO = [
    Zoo("mlp_mse", MLPRegression, regression_data, False),
    Zoo("cnn_bn", SmallCNN, image_data(), True),
    Zoo("resnet", ResNetish, image_data(), True),
    Zoo("mobilenet", MobileNetish, image_data(), True),
    Zoo("vit", ViT, image_data(), False),
    Zoo("bert", BERTish, bert_data, False),
    Zoo("gpt2", GPT2, lm_data, False),
    Zoo("transformer", Seq2SeqTransformer, seq2seq_data, False),
    Zoo("gru", GRUClassifier, text_data(4), False),
    Zoo("rnn_tagger", RNNTagger, lambda rng, n: [("x", tokens(rng, n)),
                                                 ("y", tokens(rng, n, vocab=5))], False),
    Zoo("seq2seq_lstm", Seq2SeqLSTM, seq2seq_data, False),
    Zoo("lstm_packed_sorted", lambda: PackedLSTM(True), packed_data(True), False),
    Zoo("lstm_packed_unsorted", lambda: PackedLSTM(False), packed_data(False), False),
    Zoo("gru_packed_bidir", PackedBiGRU, packed_data(False), False),
    Zoo("ncf", NCF, user_item_data, False),
    Zoo("deepfm", DeepFM, fields_data, False),
    Zoo("wide_deep", WideDeep, wide_deep_data, False),
    Zoo("dlrm", DLRM, dlrm_data, False),
    Zoo("sasrec", SASRec, sasrec_data, False),
    Zoo("two_tower", TwoTower, two_tower_data, False),
    Zoo("word2vec", Word2Vec, word2vec_data, False),
    Zoo("fasttext", FastText, text_data(4), False),
    Zoo("instancenorm", InstanceNormNet, image_data(), False),
    Zoo("flip", FlipNet, text_data(3), False),
]

"""A tiny causal transformer for dtsim's text data set (text(FILE, k):
shape (k,), byte ids): byte and position embeddings of 64, two pre-norm
layers of 4-head self-attention with a causal mask and a 128-wide ReLU
feed-forward, a linear layer to the bytes. The output is the logits at
every position (batch x k x classes); dtsim's targets are each position's
next byte (the window shifted by one, then the sample's label), so the
default loss is the cross-entropy over all positions and the accuracy the
next-byte accuracy over all positions."""
import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self, length, vocab, width=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(length, width))
        layer = nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab)
        mask = torch.triu(torch.full((length, length), float("-inf")), 1)
        self.register_buffer("mask", mask, persistent=False)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, ids):
        h = self.embed(ids) + self.pos
        return self.out(self.norm(self.body(h, mask=self.mask)))


def model(shape, classes):
    return Tiny(shape[0], classes)

/* Layer profiles of the proxy presets: each layer's parameters and FLOPs,
 * built from the architecture definitions, for timing the forward and
 * backward passes layer by layer and bucketing gradients as PyTorch DDP
 * does (docs/algorithms.md section 0.8).
 *
 * Sources of the architectures (the counts below reproduce the published
 * totals exactly where those are exact):
 *   ResNet-18/50/101: He et al. 2016 (arXiv:1512.03385) Table 1, as in
 *     torchvision.models.resnet (BasicBlock / Bottleneck with the stride on
 *     the 3x3 conv, 1x1 projection shortcut in the first block of a stage
 *     whose shape changes). Conv weights without bias plus batch-norm scale
 *     and shift; fc with bias. Sums: 11,689,512 / 25,557,032 / 44,549,160
 *     parameters and 1,814,073,344 / 4,089,184,256 / 7,801,405,440 MACs
 *     (conv and fc), the torchvision model-card figures.
 *   Inception V3: Szegedy et al. 2016 (arXiv:1512.00567), as in
 *     torchvision.models.inception_v3 without the auxiliary classifier
 *     (used in training only, its loss weighted 0.3; not counted): 299x299
 *     input, conv + batch norm without bias throughout (factorized 1x7 /
 *     7x1 and 1x3 / 3x1 convolutions), fc 2048 x 1000 with bias; one layer
 *     per convolution, named module.branch. Sums: 23,834,568 parameters
 *     (torchvision's 27,161,264 less the AuxLogits head's 3,326,696) and
 *     5,713,216,096 MACs (torchvision's model card: 5.71 GFLOPS, which are
 *     MACs).
 *   VGG-16: Simonyan & Zisserman 2015 (arXiv:1409.1556) configuration D, as
 *     in torchvision.models.vgg16: 13 3x3 convs and 3 fc, all with bias;
 *     138,357,544 parameters, 15,470,264,320 MACs.
 *   LSTM (PTB, large): Zaremba et al. 2014 (arXiv:1409.2329): embedding
 *     10000 x 1500, two LSTM layers of 1500 (4 gates x 1500 x (1500 + 1500)
 *     weights + 4 x 1500 biases), softmax 1500 x 10000 + 10000; 66,022,000
 *     parameters. FLOPs per token: 2 x 4 x 1500 x 3000 per LSTM layer, 2 x
 *     1500 x 10000 for the softmax, none for the embedding lookup.
 *   BERT: Devlin et al. 2019 (arXiv:1810.04805) and the reference code
 *     (google-research/bert modeling.py): embeddings (30522 word, 512
 *     position, 2 segment, layer norm), L encoder layers (4 d x d attention
 *     projections with bias, d x 4d and 4d x d feed-forward with bias, two
 *     layer norms), pooler d x d with bias; 109,482,240 (base) and
 *     335,141,888 (large) parameters, apportioned to the 110M and 340M of
 *     the paper.
 *   GPT-2: Radford et al. 2019 and the Hugging Face gpt2 / gpt2-xl configs
 *     (V = 50257, n_ctx = 1024): token and position embeddings (the output
 *     projection is tied to the token embedding, so its gradient is
 *     complete only when the embedding's is: it sits in the last layer of
 *     the backward pass), L blocks of 12 d^2 + 13 d parameters, final layer
 *     norm; 124,439,808 and 1,557,611,200 parameters.
 *   LLaMA-7B: Touvron et al. 2023 (arXiv:2302.13971) and the released
 *     config (d = 4096, 32 layers, SwiGLU 11008, V = 32000, RMSNorm, untied
 *     output); 6,738,415,616 parameters.
 * Transformer FLOPs per token follow the proxy totals (Kaplan et al. 2020,
 * arXiv:2001.08361, Table 1): a block costs 2 x its non-embedding weights
 * (12 d^2, or 4 d^2 + 3 d d_ff for SwiGLU) + 2 n_ctx d for attention, the
 * output logits 2 d V, embeddings nothing; BERT's pooler is not counted.
 *
 * Invariant: the profile sums to the proxy's totals exactly. The architecture
 * gives each layer's share; the proxy's totals (published, sometimes
 * rounded: BERT's 110M) are apportioned by cumulative rounding, so a layer
 * differs from its exact share by less than one parameter or FLOP, every
 * share is an integer and the sums in any order are exact. The backward
 * pass of a layer is 2 x its forward (input and weight gradients), the
 * convention of the proxy totals (training = 3 x forward). */
#include "workloads/presets.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct raw_layer {
    char name[32];
    int64_t params; /* architecture count */
    int64_t flops;  /* forward FLOPs per sample (or any unit proportional to them) */
} raw_layer;

typedef struct raw_profile {
    raw_layer layer[WL_PROXY_LAYERS_MAX];
    int n;
} raw_profile;

static void add(raw_profile *r, int64_t params, int64_t flops, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(raw_profile *r, int64_t params, int64_t flops, const char *fmt, ...)
{
    if (r->n >= WL_PROXY_LAYERS_MAX)
        return; /* cannot happen with the architectures below (tested) */
    raw_layer *l = &r->layer[r->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->name, sizeof l->name, fmt, ap);
    va_end(ap);
    l->params = params;
    l->flops = flops;
}

/* A convolution with batch norm (no bias): k x k x cin x cout weights plus
 * 2 cout, 2 x k^2 cin cout h^2 FLOPs at output size h x h. */
static void conv_bn(raw_profile *r, int k, int64_t cin, int64_t cout, int64_t h,
                    const char *name)
{
    add(r, k * k * cin * cout + 2 * cout, 2 * k * k * cin * cout * h * h, "%s", name);
}

/* torchvision ResNet: 224x224 input, 7x7/2 stem to 112, max-pool to 56. */
static void resnet(raw_profile *r, const int blocks[4], int bottleneck)
{
    static const int64_t width[4] = {64, 128, 256, 512};
    conv_bn(r, 7, 3, 64, 112, "conv1");
    int64_t cin = 64, h = 56;
    char name[32];
    for (int s = 0; s < 4; s++) {
        for (int b = 0; b < blocks[s]; b++) {
            int stride = b == 0 && s > 0 ? 2 : 1;
            int64_t ho = h / stride, w = width[s];
            int64_t out = bottleneck ? 4 * w : w;
            if (bottleneck) {
                snprintf(name, sizeof name, "layer%d.%d.conv1", s + 1, b);
                conv_bn(r, 1, cin, w, h, name);
                snprintf(name, sizeof name, "layer%d.%d.conv2", s + 1, b);
                conv_bn(r, 3, w, w, ho, name);
                snprintf(name, sizeof name, "layer%d.%d.conv3", s + 1, b);
                conv_bn(r, 1, w, out, ho, name);
            } else {
                snprintf(name, sizeof name, "layer%d.%d.conv1", s + 1, b);
                conv_bn(r, 3, cin, w, ho, name);
                snprintf(name, sizeof name, "layer%d.%d.conv2", s + 1, b);
                conv_bn(r, 3, w, w, ho, name);
            }
            if (b == 0 && (stride != 1 || cin != out)) {
                snprintf(name, sizeof name, "layer%d.%d.downsample", s + 1, b);
                conv_bn(r, 1, cin, out, ho, name);
            }
            cin = out;
            h = ho;
        }
    }
    add(r, cin * 1000 + 1000, 2 * cin * 1000, "fc");
}

/* A kh x kw convolution with batch norm at output size h x h. */
static void conv_kk(raw_profile *r, int kh, int kw, int64_t cin, int64_t cout, int64_t h,
                    const char *block, const char *name)
{
    add(r, kh * kw * cin * cout + 2 * cout, 2 * kh * kw * cin * cout * h * h, "%s.%s", block,
        name);
}

/* Inception V3 blocks as torchvision names them (35x35, 17x17, 8x8 grids). */
static void inception_a(raw_profile *r, const char *b, int64_t cin, int64_t pool)
{
    conv_kk(r, 1, 1, cin, 64, 35, b, "branch1x1");
    conv_kk(r, 1, 1, cin, 48, 35, b, "branch5x5_1");
    conv_kk(r, 5, 5, 48, 64, 35, b, "branch5x5_2");
    conv_kk(r, 1, 1, cin, 64, 35, b, "branch3x3dbl_1");
    conv_kk(r, 3, 3, 64, 96, 35, b, "branch3x3dbl_2");
    conv_kk(r, 3, 3, 96, 96, 35, b, "branch3x3dbl_3");
    conv_kk(r, 1, 1, cin, pool, 35, b, "branch_pool");
}

static void inception_c(raw_profile *r, const char *b, int64_t c7)
{
    conv_kk(r, 1, 1, 768, 192, 17, b, "branch1x1");
    conv_kk(r, 1, 1, 768, c7, 17, b, "branch7x7_1");
    conv_kk(r, 1, 7, c7, c7, 17, b, "branch7x7_2");
    conv_kk(r, 7, 1, c7, 192, 17, b, "branch7x7_3");
    conv_kk(r, 1, 1, 768, c7, 17, b, "branch7x7dbl_1");
    conv_kk(r, 7, 1, c7, c7, 17, b, "branch7x7dbl_2");
    conv_kk(r, 1, 7, c7, c7, 17, b, "branch7x7dbl_3");
    conv_kk(r, 7, 1, c7, c7, 17, b, "branch7x7dbl_4");
    conv_kk(r, 1, 7, c7, 192, 17, b, "branch7x7dbl_5");
    conv_kk(r, 1, 1, 768, 192, 17, b, "branch_pool");
}

static void inception_e(raw_profile *r, const char *b, int64_t cin)
{
    conv_kk(r, 1, 1, cin, 320, 8, b, "branch1x1");
    conv_kk(r, 1, 1, cin, 384, 8, b, "branch3x3_1");
    conv_kk(r, 1, 3, 384, 384, 8, b, "branch3x3_2a");
    conv_kk(r, 3, 1, 384, 384, 8, b, "branch3x3_2b");
    conv_kk(r, 1, 1, cin, 448, 8, b, "branch3x3dbl_1");
    conv_kk(r, 3, 3, 448, 384, 8, b, "branch3x3dbl_2");
    conv_kk(r, 1, 3, 384, 384, 8, b, "branch3x3dbl_3a");
    conv_kk(r, 3, 1, 384, 384, 8, b, "branch3x3dbl_3b");
    conv_kk(r, 1, 1, cin, 192, 8, b, "branch_pool");
}

static void inception_v3(raw_profile *r)
{
    /* stem: 299 -> 149 -> 147 -> 147, pool -> 73, 73 -> 71, pool -> 35 */
    conv_kk(r, 3, 3, 3, 32, 149, "Conv2d_1a_3x3", "conv");
    conv_kk(r, 3, 3, 32, 32, 147, "Conv2d_2a_3x3", "conv");
    conv_kk(r, 3, 3, 32, 64, 147, "Conv2d_2b_3x3", "conv");
    conv_kk(r, 1, 1, 64, 80, 73, "Conv2d_3b_1x1", "conv");
    conv_kk(r, 3, 3, 80, 192, 71, "Conv2d_4a_3x3", "conv");
    inception_a(r, "Mixed_5b", 192, 32);
    inception_a(r, "Mixed_5c", 256, 64);
    inception_a(r, "Mixed_5d", 288, 64);
    /* Mixed_6a (grid reduction 35 -> 17) */
    conv_kk(r, 3, 3, 288, 384, 17, "Mixed_6a", "branch3x3");
    conv_kk(r, 1, 1, 288, 64, 35, "Mixed_6a", "branch3x3dbl_1");
    conv_kk(r, 3, 3, 64, 96, 35, "Mixed_6a", "branch3x3dbl_2");
    conv_kk(r, 3, 3, 96, 96, 17, "Mixed_6a", "branch3x3dbl_3");
    inception_c(r, "Mixed_6b", 128);
    inception_c(r, "Mixed_6c", 160);
    inception_c(r, "Mixed_6d", 160);
    inception_c(r, "Mixed_6e", 192);
    /* Mixed_7a (grid reduction 17 -> 8) */
    conv_kk(r, 1, 1, 768, 192, 17, "Mixed_7a", "branch3x3_1");
    conv_kk(r, 3, 3, 192, 320, 8, "Mixed_7a", "branch3x3_2");
    conv_kk(r, 1, 1, 768, 192, 17, "Mixed_7a", "branch7x7x3_1");
    conv_kk(r, 1, 7, 192, 192, 17, "Mixed_7a", "branch7x7x3_2");
    conv_kk(r, 7, 1, 192, 192, 17, "Mixed_7a", "branch7x7x3_3");
    conv_kk(r, 3, 3, 192, 192, 8, "Mixed_7a", "branch7x7x3_4");
    inception_e(r, "Mixed_7b", 1280);
    inception_e(r, "Mixed_7c", 2048);
    add(r, 2048 * 1000 + 1000, 2 * 2048 * 1000, "fc");
}

static void resnet18(raw_profile *r)
{
    static const int blocks[4] = {2, 2, 2, 2};
    resnet(r, blocks, 0);
}

static void resnet50(raw_profile *r)
{
    static const int blocks[4] = {3, 4, 6, 3};
    resnet(r, blocks, 1);
}

static void resnet101(raw_profile *r)
{
    static const int blocks[4] = {3, 4, 23, 3};
    resnet(r, blocks, 1);
}

/* VGG-16 (configuration D); 0 marks a 2x2 max-pool. */
static void vgg16(raw_profile *r)
{
    static const int cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0,
                              512, 512, 512, 0, 512, 512, 512, 0};
    int64_t cin = 3, h = 224;
    int conv = 0;
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        if (cfg[i] == 0) {
            h /= 2;
            continue;
        }
        int64_t c = cfg[i];
        add(r, 9 * cin * c + c, 2 * 9 * cin * c * h * h, "conv%d", ++conv);
        cin = c;
    }
    static const int64_t fc[4] = {512 * 7 * 7, 4096, 4096, 1000};
    for (int i = 0; i < 3; i++)
        add(r, fc[i] * fc[i + 1] + fc[i + 1], 2 * fc[i] * fc[i + 1], "fc%d", 6 + i);
}

static void lstm_ptb(raw_profile *r)
{
    const int64_t d = 1500, v = 10000, tokens = 35;
    add(r, v * d, 0, "embedding");
    for (int i = 0; i < 2; i++)
        add(r, 4 * d * 2 * d + 4 * d, tokens * 2 * 4 * d * 2 * d, "lstm%d", i + 1);
    add(r, d * v + v, tokens * 2 * d * v, "softmax");
}

/* BERT encoder: d model width, L layers, 128-token sequences. */
static void bert(raw_profile *r, int64_t d, int layers)
{
    const int64_t v = 30522, n_pos = 512, ctx = 128;
    add(r, v * d + n_pos * d + 2 * d + 2 * d, 0, "embeddings");
    int64_t block = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 2 * 2 * d;
    for (int i = 0; i < layers; i++)
        add(r, block, ctx * (2 * 12 * d * d + 2 * ctx * d), "encoder.layer.%d", i);
    add(r, d * d + d, 0, "pooler");
}

static void bert_base(raw_profile *r) { bert(r, 768, 12); }
static void bert_large(raw_profile *r) { bert(r, 1024, 24); }

/* GPT-2: 1024-token sequences, the output projection tied to wte. */
static void gpt2_arch(raw_profile *r, int64_t d, int layers)
{
    const int64_t v = 50257, ctx = 1024;
    add(r, v * d + ctx * d, 0, "wte+wpe");
    for (int i = 0; i < layers; i++)
        add(r, 12 * d * d + 13 * d, ctx * (2 * 12 * d * d + 2 * ctx * d), "h.%d", i);
    add(r, 2 * d, ctx * 2 * d * v, "ln_f+lm_head(tied)");
}

static void gpt2(raw_profile *r) { gpt2_arch(r, 768, 12); }
static void gpt2_xl(raw_profile *r) { gpt2_arch(r, 1600, 48); }

static void llama_7b(raw_profile *r)
{
    const int64_t d = 4096, ff = 11008, v = 32000, ctx = 2048;
    add(r, v * d, 0, "embed_tokens");
    int64_t weights = 4 * d * d + 3 * d * ff;
    for (int i = 0; i < 32; i++)
        add(r, weights + 2 * d, ctx * (2 * weights + 2 * ctx * d), "layers.%d", i);
    add(r, d + d * v, ctx * 2 * d * v, "norm+lm_head");
}

static const struct {
    const char *proxy;
    void (*build)(raw_profile *r);
} arch_table[] = {
    {"resnet18", resnet18}, {"resnet50", resnet50}, {"resnet101", resnet101},
    {"inception_v3", inception_v3},
    {"vgg16", vgg16},       {"lstm_ptb", lstm_ptb}, {"bert_base", bert_base},
    {"bert_large", bert_large}, {"gpt2", gpt2},     {"gpt2_xl", gpt2_xl},
    {"llama_7b", llama_7b}, {NULL, NULL},
};

/* Cumulative rounding: the integer part of total up to weight prefix c of
 * w. Monotone in c and equal to total at c = w, so consecutive differences
 * are >= 0 and sum to total exactly. */
static int64_t share(int64_t total, int64_t c, int64_t w)
{
    if (c >= w || w <= 0)
        return c >= w ? total : 0;
    return (int64_t)llround((double)total * ((double)c / (double)w));
}

int wl_proxy_layers(const wl_proxy *p, wl_proxy_layer *out, int cap)
{
    if (!p)
        return 0;
    void (*build)(raw_profile *) = NULL;
    for (int i = 0; arch_table[i].proxy; i++)
        if (strcmp(arch_table[i].proxy, p->name) == 0)
            build = arch_table[i].build;
    raw_profile raw = {.n = 0};
    if (build) {
        build(&raw);
    } else {
        /* a proxy without an architecture: one layer holding everything */
        add(&raw, p->params, 1, "all");
    }
    int64_t wp = 0, wf = 0;
    for (int i = 0; i < raw.n; i++) {
        wp += raw.layer[i].params;
        wf += raw.layer[i].flops;
    }
    const int64_t fwd = (int64_t)llround(p->forward_flops);
    const int64_t bwd = (int64_t)llround(p->flops_per_sample) - fwd;
    int64_t cp = 0, cf = 0;
    int64_t prev_p = 0, prev_f = 0, prev_b = 0;
    for (int i = 0; i < raw.n; i++) {
        cp += raw.layer[i].params;
        cf += raw.layer[i].flops;
        int64_t sp = share(p->params, cp, wp);
        int64_t sf = share(fwd, cf, wf);
        int64_t sb = share(bwd, cf, wf);
        /* forward order i is backward position n - 1 - i */
        int j = raw.n - 1 - i;
        if (j < cap) {
            wl_proxy_layer *l = &out[j];
            memcpy(l->name, raw.layer[i].name, sizeof l->name);
            l->params = sp - prev_p;
            l->forward_flops = (double)(sf - prev_f);
            l->backward_flops = (double)(sb - prev_b);
        }
        prev_p = sp;
        prev_f = sf;
        prev_b = sb;
    }
    return raw.n;
}

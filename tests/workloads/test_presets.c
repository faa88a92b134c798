/* The presets (workloads/presets.c): the proxy and device tables, and the
 * proxy models' per-layer profiles summing to their totals. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "workloads/model.h"
#include "workloads/presets.h"

Test(presets, presets_tables)
{
    static const char *const proxies[] = {"resnet18", "resnet50",   "resnet101", "inception_v3",
                                          "vgg16",    "lstm_ptb",   "bert_base", "bert_large",
                                          "gpt2",     "gpt2_xl",    "llama_7b"};
    int n = 0;
    while (wl_proxy_table[n].name)
        n++;
    cr_assert_eq(n, 11);
    for (int i = 0; i < 11; i++) {
        const wl_proxy *p = wl_proxy_find(proxies[i]);
        cr_assert_not_null(p, "%s", proxies[i]);
        cr_assert(p->params > 1000000 && p->forward_flops > 1e9, "%s", p->name);
        /* training = 3 x forward, to the 4-5 digits the table carries */
        cr_assert(fabs(p->flops_per_sample / p->forward_flops - 3) < 1e-3, "%s", p->name);
        cr_assert(p->source && strlen(p->source) > 20 && p->sample && *p->sample);
    }
    const wl_proxy *r50 = wl_proxy_find("resnet50");
    cr_assert_eq(r50->params, 25557032);
    /* torchvision's 4.089 GMACs = 8.178 GFLOPs forward */
    cr_assert(fabs(r50->forward_flops - 2 * 4.089e9) < 1e6);
    /* a transformer's forward is ~2 x params x tokens (Kaplan et al.) */
    const wl_proxy *gpt = wl_proxy_find("gpt2_xl");
    double ratio = gpt->forward_flops / (2.0 * (double)gpt->params * 1024);
    cr_assert(ratio > 1 && ratio < 1.2, "gpt2_xl ratio %g", ratio);
    cr_assert_null(wl_proxy_find("none"));
    cr_assert_null(wl_proxy_find(NULL));
    cr_assert_null(wl_proxy_find("resnet"));
    static const char *const devices[] = {"p100", "v100", "a100", "h100", "laptop_cpu"};
    for (int i = 0; i < 5; i++) {
        const wl_device *d = wl_device_find(devices[i]);
        cr_assert_not_null(d, "%s", devices[i]);
        cr_assert(d->peak_flops > 1e11 && d->source && d->precision);
        cr_assert_eq(d->peak[WL_FP32], d->peak_flops, "%s", d->name);
    }
    cr_assert_eq(wl_device_find("v100")->peak_flops, 15.7e12);
    cr_assert_eq(wl_device_find("a100")->peak_flops, 19.5e12);
    cr_assert_null(wl_device_find("tpu"));
}

/* Layer profiles: every proxy's layers sum exactly to its totals; the CNN
 * and LSTM layers are the architecture's own counts (the published totals
 * are exact), a transformer layer is its architecture count scaled to the
 * published rounded total, within one unit. */
Test(presets, proxy_layer_profiles_sum_to_the_totals)
{
    static wl_proxy_layer l[WL_PROXY_LAYERS_MAX];
    static const struct {
        const char *name;
        int n;
    } counts[] = {{"resnet18", 21}, {"resnet50", 54}, {"resnet101", 105}, {"vgg16", 16},
                  {"lstm_ptb", 4},  {"bert_base", 14}, {"bert_large", 26}, {"gpt2", 14},
                  {"gpt2_xl", 50},  {"llama_7b", 34}};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        const wl_proxy *p = wl_proxy_find(counts[k].name);
        cr_assert_not_null(p);
        int n = wl_proxy_layers(p, NULL, 0);
        cr_assert_eq(n, counts[k].n, "%s: %d layers", p->name, n);
        cr_assert_eq(wl_proxy_layers(p, l, WL_PROXY_LAYERS_MAX), n);
        int64_t params = 0;
        double fwd = 0, bwd = 0;
        for (int i = 0; i < n; i++) {
            cr_assert(l[i].params >= 0 && l[i].forward_flops >= 0 &&
                      l[i].backward_flops >= 0, "%s %s", p->name, l[i].name);
            cr_assert(l[i].name[0]);
            params += l[i].params;
            fwd += l[i].forward_flops;
            bwd += l[i].backward_flops;
        }
        cr_assert_eq(params, p->params, "%s: %lld", p->name, (long long)params);
        cr_assert_eq(fwd, p->forward_flops, "%s: %.17g", p->name, fwd);
        cr_assert_eq(fwd + bwd, p->flops_per_sample, "%s: %.17g", p->name, fwd + bwd);
    }
    /* every proxy of the table has an architecture (none falls back to "all") */
    for (int i = 0; wl_proxy_table[i].name; i++) {
        cr_assert_gt(wl_proxy_layers(&wl_proxy_table[i], l, WL_PROXY_LAYERS_MAX), 1);
        cr_assert_str_neq(l[0].name, "all");
    }
    /* ResNet-50 in backward order: fc first (2048 x 1000 + 1000), conv1 last
     * (7 x 7 x 3 x 64 + 2 x 64 batch norm) */
    const wl_proxy *r50 = wl_proxy_find("resnet50");
    cr_assert_eq(wl_proxy_layers(r50, l, WL_PROXY_LAYERS_MAX), 54);
    cr_assert_str_eq(l[0].name, "fc");
    cr_assert_eq(l[0].params, 2049000);
    cr_assert_str_eq(l[1].name, "layer4.2.conv3");
    cr_assert_eq(l[1].params, 512 * 2048 + 2 * 2048);
    cr_assert_str_eq(l[53].name, "conv1");
    cr_assert_eq(l[53].params, 9536);
    /* fc: 2 x 2048 x 1000 FLOPs, scaled from torchvision's exact 4,089,184,256
     * MACs to the table's 8.178e9 */
    cr_assert(fabs(l[0].forward_flops - 4096000.0 * 8.178e9 / 8178368512.0) < 1);
    cr_assert(fabs(l[0].backward_flops - 2 * 4096000.0 * 8.178e9 / 8178368512.0) < 1.5);
    /* VGG-16: fc6 holds 25088 x 4096 + 4096 of the 138M parameters */
    const wl_proxy *vgg = wl_proxy_find("vgg16");
    cr_assert_eq(wl_proxy_layers(vgg, l, WL_PROXY_LAYERS_MAX), 16);
    cr_assert_str_eq(l[2].name, "fc6");
    cr_assert_eq(l[2].params, 102764544);
    /* LSTM: softmax first, embedding (no FLOPs) last */
    const wl_proxy *lstm = wl_proxy_find("lstm_ptb");
    cr_assert_eq(wl_proxy_layers(lstm, l, WL_PROXY_LAYERS_MAX), 4);
    cr_assert_eq(l[0].params, 15010000);
    cr_assert_eq(l[1].params, 18006000);
    cr_assert_eq(l[3].params, 15000000);
    cr_assert_eq(l[3].forward_flops, 0);
    /* BERT-base: the architecture's 109,482,240 parameters scaled to 110M */
    const wl_proxy *bert = wl_proxy_find("bert_base");
    cr_assert_eq(wl_proxy_layers(bert, l, WL_PROXY_LAYERS_MAX), 14);
    cr_assert_str_eq(l[0].name, "pooler");
    cr_assert_eq(l[0].forward_flops, 0);
    cr_assert(llabs(l[5].params - llround(7087872.0 * 110e6 / 109482240.0)) <= 1);
    cr_assert_str_eq(l[13].name, "embeddings");
    /* LLaMA-7B: untied output layer first, 2 d V FLOPs per token */
    const wl_proxy *llama = wl_proxy_find("llama_7b");
    cr_assert_eq(wl_proxy_layers(llama, l, WL_PROXY_LAYERS_MAX), 34);
    cr_assert(fabs(l[0].forward_flops - 2048.0 * 2 * 4096 * 32000 * (2.8162e13 / 28162100559872.0)) < 1);
    /* a short buffer gets the first entries and the full count */
    wl_proxy_layer few[3];
    memset(few, 0, sizeof few);
    cr_assert_eq(wl_proxy_layers(r50, few, 2), 54);
    cr_assert_str_eq(few[1].name, "layer4.2.conv3");
    cr_assert_eq(few[2].name[0], '\0');
    cr_assert_eq(wl_proxy_layers(NULL, few, 3), 0);
}

/* Inception V3 at 299x299 without the auxiliary classifier: the
 * architecture's counts are torchvision's (27,161,264 parameters less the
 * AuxLogits head's 3,326,696; 5.71 GMACs), so the profile is exact. */
Test(presets, inception_v3_matches_the_published_totals)
{
    const wl_proxy *p = wl_proxy_find("inception_v3");
    cr_assert_not_null(p);
    cr_assert_eq(p->params, 27161264 - 3326696);
    cr_assert(fabs(p->forward_flops / 2 - 5.71e9) < 0.01e9, "%g MACs", p->forward_flops / 2);
    cr_assert_eq(p->forward_flops, 2.0 * 5713216096.0);
    cr_assert_eq(p->flops_per_sample, 3 * p->forward_flops);
    static wl_proxy_layer l[WL_PROXY_LAYERS_MAX];
    int n = wl_proxy_layers(p, l, WL_PROXY_LAYERS_MAX);
    cr_assert_eq(n, 95);
    /* backward order: the classifier first, the stem's first convolution last */
    cr_assert_str_eq(l[0].name, "fc");
    cr_assert_eq(l[0].params, 2048 * 1000 + 1000);
    cr_assert_eq(l[0].forward_flops, 2.0 * 2048 * 1000);
    cr_assert_str_eq(l[n - 1].name, "Conv2d_1a_3x3.conv");
    cr_assert_eq(l[n - 1].params, 3 * 3 * 3 * 32 + 2 * 32);
    cr_assert_eq(l[n - 1].forward_flops, 2.0 * 3 * 3 * 3 * 32 * 149 * 149);
    cr_assert_eq(l[n - 1].backward_flops, 2 * l[n - 1].forward_flops);
}

/* Each precision's peak is the datasheet's; a device without the unit has
 * none (0), and the names round-trip. */
Test(presets, precision_peaks_are_the_datasheets)
{
    static const struct {
        const char *device;
        double peak[WL_PRECISIONS]; /* fp32, tf32, fp16, bf16 */
    } want[] = {
        {"p100", {10.6e12, 0, 21.2e12, 0}},
        {"v100", {15.7e12, 0, 125e12, 0}},
        {"a100", {19.5e12, 156e12, 312e12, 312e12}},
        {"h100", {67e12, 494.5e12, 989.5e12, 989.5e12}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        for (int p = 0; p < WL_PRECISIONS; p++)
            cr_assert_eq(wl_device_peak(wl_device_find(want[i].device), p), want[i].peak[p],
                         "%s %s", want[i].device, wl_precision_name(p));
    cr_assert_eq(wl_device_peak(NULL, WL_FP32), 0);
    cr_assert_eq(wl_device_peak(wl_device_find("v100"), 7), 0);
    for (int p = 0; p < WL_PRECISIONS; p++)
        cr_assert_eq(wl_precision_find(wl_precision_name(p)), p);
    cr_assert_eq(wl_precision_find("FP16"), WL_FP16);
    cr_assert_eq(wl_precision_find("fp8"), -1);
    cr_assert_null(wl_precision_name(WL_PRECISIONS));
}

/* The efficiency of a published throughput is samples/s x training FLOPs
 * per sample / peak; every entry names a known device and proxy, has a
 * peak at its precision and a source. */
Test(presets, published_throughputs_give_the_efficiency)
{
    int n = 0;
    for (const wl_throughput *t = wl_throughput_table; t->device; t++, n++) {
        const wl_proxy *p = wl_proxy_find(t->proxy);
        const wl_device *d = wl_device_find(t->device);
        cr_assert(p && d, "%s on %s", t->proxy, t->device);
        cr_assert_gt(wl_device_peak(d, (int)t->precision), 0, "%s", t->device);
        cr_assert(t->samples_per_s > 0 && t->batch > 0 && strlen(t->source) > 20);
        double e = wl_device_efficiency(t->device, p, (int)t->precision);
        cr_assert_eq(e, t->samples_per_s * p->flops_per_sample / wl_device_peak(d, (int)t->precision));
        cr_assert(e > 0.1 && e < 2, "%s on %s: %g", t->proxy, t->device, e);
        cr_assert_eq(wl_throughput_find(t->device, t->proxy, (int)t->precision), t);
    }
    cr_assert_geq(n, 8);
    const wl_proxy *r50 = wl_proxy_find("resnet50");
    /* V100, ResNet-50, fp32: 367 images/s x 24.534 GFLOPs / 15.7 TFLOPS */
    cr_assert_float_eq(wl_device_efficiency("v100", r50, WL_FP32), 367 * 2.4534e10 / 15.7e12,
                       1e-12);
    cr_assert_eq(wl_device_efficiency("h100", r50, WL_FP32), 0);
    cr_assert_eq(wl_device_efficiency("v100", NULL, WL_FP32), 0);
    cr_assert_eq(wl_device_efficiency("v100", r50, WL_TF32), 0);
}
